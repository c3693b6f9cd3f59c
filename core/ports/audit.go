package ports

import "time"

// AuditRecord is one auditable action, in the shape the audit team's model
// accepts. The durable audit model belongs to that team; this foundation
// only guarantees the record is written in the same transaction as the
// change it describes (see pgoutbox.AuditWriter for the transaction seam).
// Values in Before/After are already masked.
type AuditRecord struct {
	Action        string // e.g. "config.update", "outbox.replay"
	Actor         string // authenticated subject or operator
	ResourceType  string // e.g. "system_config", "outbox_event"
	ResourceID    string // safe identifier, e.g. the config key
	Outcome       string // "accepted" or "rejected"
	Code          string // machine code of a rejection, "" when accepted
	Reason        string // Chinese, value-free explanation or operator reason
	Before, After string // masked
	RequestID     string
	CorrelationID string
	At            time.Time
}
