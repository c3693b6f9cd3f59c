package queue

import (
	"context"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// AuditConsumer keeps every outbox.AuditEventType event in inbox. The relay
// hosts it by default, so the foundation's own audit events are consumed
// (never retried for want of a handler, never failed) and kept until the
// audit team takes them; a redelivery is absorbed by the inbox.
func AuditConsumer(inbox ports.AuditInbox) Consumer {
	return Consumer{EventType: outbox.AuditEventType, Handler: Handle(
		func(ctx context.Context, env outbox.Envelope, p outbox.AuditPayload) error {
			return inbox.Keep(ctx, env.EventID, ports.AuditRecord(p))
		})}
}
