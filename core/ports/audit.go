package ports

import (
	"context"
	"time"
)

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
	Outcome       string // AuditAccepted, AuditRejected or AuditNoop
	Code          string // machine code of a rejection, "" when accepted
	Reason        string // Chinese, value-free explanation or operator reason
	Before, After string // masked
	RequestID     string
	CorrelationID string
	At            time.Time
	// Origin is where a CLI ran, "user@host" from its operating system,
	// recorded beside the free-text operator and reason; empty for API
	// requests.
	Origin string
}

// Audit outcomes.
const (
	// AuditAccepted is a change that was made.
	AuditAccepted = "accepted"
	// AuditRejected is a change that was refused (Code says why).
	AuditRejected = "rejected"
	// AuditNoop is an accepted command that changed nothing: a replay whose
	// events were all skipped, a lease release that found no lease. Stores
	// record an AuditAccepted record this way when no row changed.
	AuditNoop = "noop"
)

// AuditEntry is an audit record as kept, with the id of the audit event
// that carried it.
type AuditEntry struct {
	EventID string
	AuditRecord
	// TakenAt is set once the audit team's writer has taken the record.
	TakenAt *time.Time
}

// AuditFilter selects records for AuditInbox.ListAudit. Zero fields match
// everything.
type AuditFilter struct {
	Actor        string
	Action       string
	ResourceType string
	ResourceID   string
	Since, Until time.Time // recorded at or after Since, before Until
	Limit        int       // default 50, max 500
}

// AuditInbox keeps every audit record the foundation emits until the audit
// team's writer takes it: the relay's default consumer of audit events
// keeps each one, and nothing in the template deletes them.
//
// When the database cannot be reached every method returns promptly an
// error wrapping ErrUnavailable and changes nothing.
type AuditInbox interface {
	// Keep stores rec under eventID (the id of the audit event that carried
	// it) once; keeping the same eventID again is a success that changes
	// nothing, so a redelivered event is absorbed.
	Keep(ctx context.Context, eventID string, rec AuditRecord) error

	// ListAudit returns the records matching f, newest first.
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}
