package pgoutbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// Store defaults and bounds.
const (
	// DefaultClaimLimit is the default Config.ClaimLimit.
	DefaultClaimLimit = 1000
	// DefaultSweepLimit is the default Config.SweepLimit.
	DefaultSweepLimit = 10_000
	// MaxLimit bounds ClaimLimit and SweepLimit: larger batches hold
	// row locks and WAL for too long in one statement.
	MaxLimit = 100_000
	// DefaultClaimBytes is the default Config.ClaimBytes (16 MiB): with
	// payloads at outbox.MaxPayloadBytes a claim holds 64 rows, so two
	// relay loops and their copies (driver buffer, event, envelope) stay
	// far inside the relay's 512 Mi pod limit.
	DefaultClaimBytes = 16 << 20
)

// List limits, fixed by ports.OutboxFilter.
const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// Config configures a Store. The zero value is valid.
type Config struct {
	// ClaimLimit caps the rows one Claim takes; a larger ClaimParams.Limit
	// is lowered to it. Default: DefaultClaimLimit. Range 1..MaxLimit.
	ClaimLimit int
	// ClaimBytes caps the payload bytes (their JSON text) one Claim
	// returns, so the relay's memory is bounded by bytes as well as rows:
	// rows are taken in claim order while their sum stays within it, the
	// first row always (a payload is at most outbox.MaxPayloadBytes).
	// Default: DefaultClaimBytes. At least outbox.MaxPayloadBytes.
	ClaimBytes int64
	// SweepLimit caps the rows one RecoverExpired or PurgeDelivered call
	// touches; a larger limit is lowered to it, and callers loop until
	// the call returns less than they asked for. Default:
	// DefaultSweepLimit. Range 1..MaxLimit.
	SweepLimit int
	// Audit writes the audit records of Replay and ReleaseLeases in their
	// transaction. Default: an EventAuditWriter.
	Audit AuditWriter
	// AsynchronousCommit makes the lease holder's writes (Claim, Complete,
	// Fail, Renew, Release, RecoverExpired) and RecordConsumed commit
	// without waiting for the WAL flush: each statement turns
	// synchronous_commit off for its own transaction only (set_config(...,
	// true), no session setting, so it holds through a pooler in
	// transaction mode). A database crash can then lose the last few
	// marks: their events are delivered again, or a claim is forgotten
	// (at least once, as designed). The relay's own store sets it;
	// business writes and the dead-letter mark never go through it.
	AsynchronousCommit bool
}

func (c Config) withDefaults() (Config, error) {
	c.ClaimLimit = cmp.Or(c.ClaimLimit, DefaultClaimLimit)
	c.SweepLimit = cmp.Or(c.SweepLimit, DefaultSweepLimit)
	c.ClaimBytes = cmp.Or(c.ClaimBytes, DefaultClaimBytes)
	if c.ClaimBytes < outbox.MaxPayloadBytes {
		return c, fmt.Errorf("pgoutbox: Config.ClaimBytes %d below outbox.MaxPayloadBytes (%d)", c.ClaimBytes, outbox.MaxPayloadBytes)
	}
	if c.Audit == nil {
		c.Audit = NewEventAuditWriter(AuditConfig{})
	}
	if c.ClaimLimit < 1 || c.ClaimLimit > MaxLimit {
		return c, fmt.Errorf("pgoutbox: Config.ClaimLimit %d out of range 1..%d", c.ClaimLimit, MaxLimit)
	}
	if c.SweepLimit < 1 || c.SweepLimit > MaxLimit {
		return c, fmt.Errorf("pgoutbox: Config.SweepLimit %d out of range 1..%d", c.SweepLimit, MaxLimit)
	}
	return c, nil
}

// Store is ports.OutboxStore on tb_outbox_event. Every relay method
// is a single SQL statement, so it is atomic on its own and safe for any
// number of concurrent relays: claims use FOR UPDATE SKIP LOCKED and every
// later write repeats the owner and fencing token in its WHERE clause.
type Store struct {
	db  bun.IDB
	cfg Config
	q   queries
	// cut is how many rows the last Claim returned when the byte budget
	// cut it (0: it did not): the next claim locks at most twice that, so
	// a backlog of large payloads does not size up ClaimLimit rows each
	// time to return a few.
	cut atomic.Int64
}

var _ ports.OutboxStore = (*Store)(nil)

// NewStore returns a Store that reads and writes through db
// (a *bun.DB pool, or a bun.Tx to run every call inside one transaction).
// It returns an error for an out-of-range config.
func NewStore(db bun.IDB, cfg Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("pgoutbox: NewStore needs a db; pass the *bun.DB from postgres.Open")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Store{db: db, cfg: cfg, q: newQueries(cfg.AsynchronousCommit)}, nil
}

// Append stores events as Pending in one INSERT; see Append. Business
// code calls Append with its own transaction instead.
func (s *Store) Append(ctx context.Context, events ...outbox.Event) error {
	return Append(ctx, s.db, events...)
}

// Get returns the event with eventID, or an error wrapping ports.ErrNotFound
// (also for an id that is not a uuid, since no such row can exist).
func (s *Store) Get(ctx context.Context, eventID string) (outbox.Event, error) {
	if _, err := uuid.Parse(eventID); err != nil {
		return outbox.Event{}, fmt.Errorf("get outbox event %q: %w", eventID, ports.ErrNotFound)
	}
	var row outboxRow
	if err := s.db.NewSelect().Model(&row).Where("event_id = ?::uuid", eventID).Scan(ctx); err != nil {
		return outbox.Event{}, fmt.Errorf("get outbox event %s: %w", eventID, pgerr.Translate(err)) // no row: ports.ErrNotFound
	}
	return row.toEvent(), nil
}

// fromView reports whether List reads vw_outbox_event: for a lookup by
// aggregate or correlation id in every status, whose partial indexes skip
// Delivering rows (migration 20261201000009) and which the view answers
// from two indexes. Anything else reads the table: a status names one
// index, and the newest rows come from the primary key in order, which
// the view's UNION ALL would turn into a scan and a sort.
func fromView(f ports.OutboxFilter) bool {
	return f.Status == 0 && (f.CorrelationID != "" || f.AggregateType != "" || f.AggregateID != "")
}

// List returns events matching f, newest (highest id) first. A zero Limit
// means 50; a Limit above 500 is lowered to 500. An invalid non-zero
// Status is an error.
func (s *Store) List(ctx context.Context, f ports.OutboxFilter) ([]outbox.Event, error) {
	if f.Status != 0 && !f.Status.Valid() {
		return nil, fmt.Errorf("list outbox events: status %d is not 1..4", f.Status)
	}
	limit := min(cmp.Or(f.Limit, defaultListLimit), maxListLimit)
	if limit < 0 {
		return nil, fmt.Errorf("list outbox events: limit %d is negative", f.Limit)
	}
	var rows []outboxRow
	q := s.db.NewSelect().Model(&rows).OrderExpr("id DESC").Limit(int64(limit))
	if fromView(f) {
		q = q.ModelTableExpr("vw_outbox_event AS ?TableAlias")
	}
	if f.Status != 0 {
		q = q.Where("status = ?", int16(f.Status))
	}
	for _, c := range [...]struct{ col, v string }{
		{"event_type", f.EventType},
		{"correlation_id", f.CorrelationID},
		{"aggregate_type", f.AggregateType},
		{"aggregate_id", f.AggregateID},
	} {
		if c.v != "" {
			q = q.Where("? = ?", bun.Ident(c.col), c.v)
		}
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list outbox events: %w", pgerr.Translate(err))
	}
	return toEvents(rows), nil
}
