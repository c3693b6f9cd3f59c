package pgoutbox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/adapters/postgres/internal/wakemark"
	"github.com/july/template/core/outbox"
)

// appendColumns are the columns Append writes; every other column
// takes its default (lease_token 0, no lease, no error, not delivered).
const appendColumns = `event_id, event_type, payload_version, aggregate_type, aggregate_id,
	resource_type, resource_id, business_key, request_id, correlation_id, payload,
	status, retry_count, next_attempt_at, created_at, updated_at, trace_parent, trace_state, not_before, ordered`

// appendRow is one VALUES tuple; the casts keep the row typed when bun
// inlines the arguments (also in orderedHead's SELECT FROM VALUES).
const appendRow = `(?::uuid, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?::jsonb, 1, ?, ?::timestamptz, ?::timestamptz, ?::timestamptz, NULLIF(?, ''), NULLIF(?, ''), ?::timestamptz, ?::boolean)`

// orderedLockClassSQL is the first key of the transaction-level advisory
// locks that serialise the writers of one aggregate's ordered events
// ("ORDE", 0x4f524445); the second is hashtext of the aggregate. A hash
// collision only makes two aggregates' writers wait for each other.
const orderedLockClassSQL = "1330791493"

// orderedHead and orderedTail wrap the VALUES of a batch holding ordered
// events: the INSERT takes each aggregate's lock (keys sorted, so two
// batches never wait on each other in a cycle) before any row is produced,
// hence before any id is drawn from the sequence. The lock is held until
// the transaction ends, so a later writer of the aggregate draws a larger
// id and commits after: id order is commit order within an aggregate, and
// the relay never sees a successor whose predecessor is still uncommitted.
// The uncorrelated subquery is a one-time filter evaluated before the
// first row.
const (
	orderedHead = `WITH ordered_lock AS MATERIALIZED (
	SELECT pg_advisory_xact_lock(` + orderedLockClassSQL + `, hashtext(k)) FROM unnest(?::text[]) AS u(k)
)
INSERT INTO tb_outbox_event (` + appendColumns + `)
SELECT * FROM (VALUES `
	orderedTail = `) AS v WHERE (SELECT count(*) FROM ordered_lock) >= 0`
)

// Append inserts events as Pending through db, which is normally the
// business code's own bun.Tx: the events then commit or roll back with the
// business fact. All events go in one multi-row INSERT, so either all are
// stored or none.
//
// Events must come from outbox.New (Pending, with a payload); anything else
// is refused with an *outbox.ValidationError before any write. A duplicate
// event_id, already stored or repeated within events, returns an error
// wrapping ports.ErrConflict and stores nothing; inside a transaction that
// error also aborts the transaction, so return it to roll back. Events are
// values, so the assigned ids are not reported back: callers address events
// by EventID. Appending no events does nothing.
//
// Inside a transaction of a pool from postgres.Open (ctx being the
// transaction's context, as RunInTx hands it over), Append turns the insert
// trigger's NOTIFY off for that transaction only
// (set_config('outbox.notify', 'off', true)): the pool wakes the relay
// itself after the commit, and Postgres's notify lock would otherwise
// serialise concurrent commits. Elsewhere the trigger notifies as usual.
//
// When ctx carries a span (the HTTP request's), Append runs under an
// "outbox.append" child span and stores that span's W3C trace context in
// trace_parent/trace_state of each event that has none, so the consumer
// can link back to the request (see adapters/tracing).
func Append(ctx context.Context, db bun.IDB, events ...outbox.Event) (err error) {
	if len(events) == 0 {
		return nil
	}
	ctx, tc, end := traceAppend(ctx, events)
	defer func() { end(err) }()
	// The ordered events' aggregates, sorted and once each, for orderedHead.
	var aggregates []string
	for i := range events {
		if events[i].Ordered {
			aggregates = append(aggregates, orderedKey(events[i].AggregateType, events[i].AggregateID))
		}
	}
	var q strings.Builder
	args := make([]any, 0, 20*len(events)+1)
	if len(aggregates) == 0 {
		q.WriteString("INSERT INTO tb_outbox_event (" + appendColumns + ") VALUES ")
	} else {
		slices.Sort(aggregates)
		args = append(args, pgdialect.Array(slices.Compact(aggregates)))
		q.WriteString(orderedHead)
	}
	for i := range events {
		ev := &events[i]
		if err := checkAppendable(ev); err != nil {
			return fmt.Errorf("append outbox event %d of %d: %w", i+1, len(events), err)
		}
		parent, state := ev.TraceParent, ev.TraceState
		if parent == "" {
			parent, state = tc.parent, tc.state
		}
		if err := outbox.CheckTraceContext(parent, state); err != nil {
			return fmt.Errorf("append outbox event %d of %d: %w", i+1, len(events), err)
		}
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(appendRow)
		args = append(args,
			ev.EventID, ev.EventType, ev.PayloadVersion, ev.AggregateType, ev.AggregateID,
			ev.ResourceType, ev.ResourceID, ev.BusinessKey, ev.RequestID, ev.CorrelationID, string(ev.Payload),
			ev.RetryCount, ev.NextAttemptAt, ev.CreatedAt, ev.UpdatedAt, parent, state, bun.NullTime{Time: ev.NotBefore}, ev.Ordered)
	}
	if len(aggregates) > 0 {
		q.WriteString(orderedTail)
	}
	if wakemark.WakesAfterCommit(ctx) {
		// RETURNING runs before the trigger, which fires after the statement.
		q.WriteString(" RETURNING set_config('outbox.notify', 'off', true)")
	}
	if _, err := db.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("append %d outbox events: %w", len(events), pgerr.Translate(err))
	}
	return nil
}

// orderedKey is an aggregate's advisory-lock key: type and id apart by a
// space, which neither may hold (outbox.New).
func orderedKey(aggregateType, aggregateID string) string {
	return aggregateType + " " + aggregateID
}

// checkAppendable refuses events that did not come from outbox.New: the
// store trusts New's validation and only checks what New guarantees.
func checkAppendable(ev *outbox.Event) error {
	switch {
	case ev.Status != outbox.Pending:
		return &outbox.ValidationError{Field: "status", Reason: fmt.Sprintf("is %s; append only new Pending events built with outbox.New", ev.Status)}
	case len(ev.Payload) == 0:
		return &outbox.ValidationError{Field: "payload", Reason: "is empty; build the event with outbox.New", Err: outbox.ErrPayloadNotStructured}
	case ev.EventID == "" || ev.NextAttemptAt.IsZero() || ev.CreatedAt.IsZero():
		return &outbox.ValidationError{Field: "event_id", Reason: "event id or times are missing; build the event with outbox.New"}
	}
	return nil
}
