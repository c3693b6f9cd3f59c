// Package pgaudit keeps the foundation's audit records in tb_audit_record
// (ports.AuditInbox) until the audit team's writer takes them.
package pgaudit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/ports"
)

// List limits, fixed by ports.AuditFilter.
const (
	defaultLimit = 50
	maxLimit     = 500
)

// Inbox is ports.AuditInbox on tb_audit_record.
type Inbox struct {
	db bun.IDB
}

var _ ports.AuditInbox = (*Inbox)(nil)

// NewInbox returns an Inbox that reads and writes through db.
func NewInbox(db bun.IDB) (*Inbox, error) {
	if db == nil {
		return nil, errors.New("pgaudit: NewInbox needs a db; pass the *bun.DB from postgres.Open")
	}
	return &Inbox{db: db}, nil
}

const keepSQL = `INSERT INTO tb_audit_record (event_id, action, actor, resource_type, resource_id, outcome, code, reason,
	before_value, after_value, request_id, correlation_id, recorded_at, origin)
VALUES (?::uuid, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (event_id) DO NOTHING`

// Keep implements ports.AuditInbox. Fields longer than their column are
// cut, never refused: an audit record is not lost for its length.
func (in *Inbox) Keep(ctx context.Context, eventID string, rec ports.AuditRecord) error {
	_, err := in.db.ExecContext(ctx, keepSQL, eventID,
		cut(rec.Action, 64), cut(rec.Actor, 128), cut(rec.ResourceType, 64), cut(rec.ResourceID, 128),
		cut(rec.Outcome, 16), cut(rec.Code, 64), rec.Reason, rec.Before, rec.After,
		cut(rec.RequestID, 128), cut(rec.CorrelationID, 128), rec.At, cut(rec.Origin, 256))
	if err != nil {
		return fmt.Errorf("keep audit record of event %s: %w", eventID, pgerr.Translate(err))
	}
	return nil
}

// ListAudit implements ports.AuditInbox.
func (in *Inbox) ListAudit(ctx context.Context, f ports.AuditFilter) ([]ports.AuditEntry, error) {
	limit := cmp.Or(f.Limit, defaultLimit)
	if limit < 1 || limit > maxLimit {
		return nil, fmt.Errorf("list audit records: limit %d outside 1..%d", f.Limit, maxLimit)
	}
	var rows []struct {
		EventID       string       `bun:"event_id"`
		Action        string       `bun:"action"`
		Actor         string       `bun:"actor"`
		ResourceType  string       `bun:"resource_type"`
		ResourceID    string       `bun:"resource_id"`
		Outcome       string       `bun:"outcome"`
		Code          string       `bun:"code"`
		Reason        string       `bun:"reason"`
		Before        string       `bun:"before_value"`
		After         string       `bun:"after_value"`
		RequestID     string       `bun:"request_id"`
		CorrelationID string       `bun:"correlation_id"`
		Origin        string       `bun:"origin"`
		RecordedAt    bun.NullTime `bun:"recorded_at"`
		TakenAt       bun.NullTime `bun:"taken_at"`
	}
	q := in.db.NewSelect().Table("tb_audit_record").
		Column("event_id", "action", "actor", "resource_type", "resource_id", "outcome", "code", "reason",
			"before_value", "after_value", "request_id", "correlation_id", "origin", "recorded_at", "taken_at")
	for col, v := range map[string]string{"actor": f.Actor, "action": f.Action, "resource_type": f.ResourceType, "resource_id": f.ResourceID} {
		if v != "" {
			q = q.Where("? = ?", bun.Ident(col), v)
		}
	}
	if !f.Since.IsZero() {
		q = q.Where("recorded_at >= ?", f.Since)
	}
	if !f.Until.IsZero() {
		q = q.Where("recorded_at < ?", f.Until)
	}
	if err := q.OrderExpr("recorded_at DESC, id DESC").Limit(int64(limit)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list audit records: %w", pgerr.Translate(err))
	}
	out := make([]ports.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = ports.AuditEntry{EventID: r.EventID, AuditRecord: ports.AuditRecord{
			Action: r.Action, Actor: r.Actor, ResourceType: r.ResourceType, ResourceID: r.ResourceID,
			Outcome: r.Outcome, Code: r.Code, Reason: r.Reason, Before: r.Before, After: r.After,
			RequestID: r.RequestID, CorrelationID: r.CorrelationID, At: r.RecordedAt.UTC(), Origin: r.Origin,
		}}
		if !r.TakenAt.IsZero() {
			t := r.TakenAt.UTC()
			out[i].TakenAt = &t
		}
	}
	return out, nil
}

// cut keeps at most n bytes of s, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
