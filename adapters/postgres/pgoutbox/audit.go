package pgoutbox

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// AuditWriter is the transaction seam for audit records: WriteAudit runs
// inside the caller's transaction (db is normally a bun.Tx), so the record
// commits or rolls back with the change it describes. An error must be
// returned, never swallowed: it rolls the change back.
//
// The durable audit model belongs to the audit team. Until their writer is
// wired in, EventAuditWriter publishes each record as an
// outbox.AuditEventType event. To swap it, implement AuditWriter on top of
// the audit team's writer (insert through db, not through a pool of your
// own) and pass it to pgconfig.NewStore and Config.Audit in place of the default.
type AuditWriter interface {
	WriteAudit(ctx context.Context, db bun.IDB, rec ports.AuditRecord) error
}

// AuditConfig configures an EventAuditWriter. The zero value is valid.
type AuditConfig struct {
	// NewIDFunc returns event ids and, when a record has none, request ids.
	// Default: uuid.NewString.
	NewIDFunc func() string
	// NowFunc stamps events, and records whose At is zero. Default: time.Now.
	NowFunc func() time.Time
}

// EventAuditWriter is the default AuditWriter: it appends one
// outbox.AuditEventType event per record, with aggregate and resource set
// to the record's resource, through Append on the caller's db.
type EventAuditWriter struct {
	newID func() string
	now   func() time.Time
}

var _ AuditWriter = (*EventAuditWriter)(nil)

// NewEventAuditWriter returns an EventAuditWriter with cfg's defaults applied.
func NewEventAuditWriter(cfg AuditConfig) *EventAuditWriter {
	w := &EventAuditWriter{newID: cfg.NewIDFunc, now: cfg.NowFunc}
	if w.newID == nil {
		w.newID = uuid.NewString
	}
	if w.now == nil {
		w.now = time.Now
	}
	return w
}

// WriteAudit implements AuditWriter. A record without RequestID gets a
// generated one (the outbox requires it); CorrelationID then defaults to
// RequestID. It returns an *outbox.ValidationError when the record cannot
// form an event (empty ResourceType or ResourceID, non-ASCII ids).
func (w *EventAuditWriter) WriteAudit(ctx context.Context, db bun.IDB, rec ports.AuditRecord) error {
	if rec.RequestID == "" {
		rec.RequestID = w.newID()
	}
	ev, err := outbox.NewAuditEvent(outbox.AuditPayload(rec), w.newID(), w.now())
	if err != nil {
		return fmt.Errorf("build audit event for %s %s: %w", rec.ResourceType, rec.ResourceID, err)
	}
	if err := Append(ctx, db, ev); err != nil {
		return fmt.Errorf("write audit record: %w", err)
	}
	return nil
}
