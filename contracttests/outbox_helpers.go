package contracttests

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// Fixed instants: the suite never reads a clock, so stores are driven only
// by the times passed in. Whole seconds survive any store's precision.
var (
	t0       = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	leaseFor = time.Minute
)

// outboxBundle is one case's store plus helpers that fail the test on
// unexpected errors.
type outboxBundle struct {
	t     *testing.T
	ctx   context.Context
	store ports.OutboxStore
}

func newOutboxBundle(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) *outboxBundle {
	t.Helper()
	return &outboxBundle{t: t, ctx: t.Context(), store: newStore(t)}
}

var eventSeq atomic.Int64

// event builds a valid event created (and due) at at.
func event(t *testing.T, at time.Time, eventType string) outbox.Event {
	t.Helper()
	n := eventSeq.Add(1)
	ev, err := outbox.New(outbox.NewParams{
		EventID:        uuid.NewString(),
		EventType:      eventType,
		PayloadVersion: 1,
		AggregateType:  "order",
		AggregateID:    fmt.Sprintf("ord-%d", n),
		ResourceType:   "order",
		ResourceID:     fmt.Sprintf("ord-%d", n),
		BusinessKey:    fmt.Sprintf("bk-%d", n),
		RequestID:      fmt.Sprintf("req-%d", n),
		CorrelationID:  fmt.Sprintf("corr-%d", n),
		Payload:        map[string]any{"order_id": n, "note": "quote ' and \" and \\ and ? survive"},
		Now:            at,
	})
	require.NoError(t, err, "build test event")
	return ev
}

// delayed builds an event committed at at and delayed until notBefore.
func delayed(t *testing.T, at, notBefore time.Time, eventType string) outbox.Event {
	t.Helper()
	ev := event(t, at, eventType)
	p := outbox.NewParams{EventID: ev.EventID, EventType: ev.EventType, PayloadVersion: 1,
		AggregateType: ev.AggregateType, AggregateID: ev.AggregateID, ResourceType: ev.ResourceType, ResourceID: ev.ResourceID,
		RequestID: ev.RequestID, Payload: map[string]any{"delayed": true}, Now: at, NotBefore: notBefore}
	ev, err := outbox.New(p)
	require.NoError(t, err, "build delayed test event")
	return ev
}

// seed appends n events of eventType created at at, one Append call.
func (b *outboxBundle) seed(at time.Time, n int, eventType string) []outbox.Event {
	b.t.Helper()
	evs := make([]outbox.Event, n)
	for i := range evs {
		evs[i] = event(b.t, at, eventType)
	}
	require.NoError(b.t, b.store.Append(b.ctx, evs...), "append %d events", n)
	return evs
}

func (b *outboxBundle) claim(owner string, now time.Time, limit int) []outbox.Event {
	b.t.Helper()
	got, err := b.store.Claim(b.ctx, ports.ClaimParams{Owner: owner, Limit: limit, LeaseFor: leaseFor, Now: now})
	require.NoError(b.t, err, "claim owner=%s now=%s limit=%d", owner, now, limit)
	return got
}

// claimOne seeds one event at t0 and claims it for owner at t0.
func (b *outboxBundle) claimOne(owner string) outbox.Event {
	b.t.Helper()
	b.seed(t0, 1, "order.created")
	got := b.claim(owner, t0, 1)
	require.Len(b.t, got, 1, "claim the single seeded event")
	return got[0]
}

// recoverPolicy is the budget the recovery cases pass: three attempts,
// backoff ceilings 1s, 2s, 4s, ... (whole seconds, any store's precision).
var recoverPolicy = outbox.Policy{MaxAttempts: 3, Backoff: outbox.Backoff{Base: time.Second, Max: time.Minute}}

// recover runs RecoverExpired under recoverPolicy.
func (b *outboxBundle) recover(now time.Time, limit int) ports.RecoverResult {
	b.t.Helper()
	res, err := b.store.RecoverExpired(b.ctx, ports.RecoverParams{Now: now, Limit: limit, Policy: recoverPolicy})
	require.NoError(b.t, err, "recover expired leases now=%s limit=%d", now, limit)
	return res
}

// requireBackoff checks that due lies within p.Backoff.Delay's bounds for
// attempt after now, [c - c/2, c] with c its ceiling, give or take the
// microsecond a store may round to.
func requireBackoff(t *testing.T, p outbox.Policy, attempt int, now, due time.Time, what string, args ...any) {
	t.Helper()
	c := p.Backoff.Ceiling(attempt)
	lo, hi := now.Add(c-c/2-time.Microsecond), now.Add(c+time.Microsecond)
	require.True(t, !due.Before(lo) && !due.After(hi), "%s: next_attempt_at %s is not within the backoff for attempt %d, [%s, %s] after %s",
		fmt.Sprintf(what, args...), due, attempt, c-c/2, c, now)
}

func (b *outboxBundle) get(eventID string) outbox.Event {
	b.t.Helper()
	ev, err := b.store.Get(b.ctx, eventID)
	require.NoError(b.t, err, "get %s", eventID)
	return ev
}

func ref(ev outbox.Event) ports.LeaseRef {
	return ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token}
}

func refs(evs []outbox.Event) []ports.LeaseRef {
	out := make([]ports.LeaseRef, len(evs))
	for i, ev := range evs {
		out[i] = ref(ev)
	}
	return out
}

func eventIDs(evs []outbox.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.EventID
	}
	return out
}

func requireTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.True(t, want.Equal(got), "%s: want %s, got %s", what, want, got)
}

// requireSameIdentity checks that what a consumer sees of an event (its id,
// payload and correlation data) did not change.
func requireSameIdentity(t *testing.T, want, got outbox.Event, why string) {
	t.Helper()
	if want.ID != 0 { // seeded events carry no id
		require.Equal(t, want.ID, got.ID, "%s: id", why)
	}
	require.Equal(t, want.EventID, got.EventID, "%s: event_id", why)
	require.JSONEq(t, string(want.Payload), string(got.Payload), "%s: payload", why)
	require.Equal(t, want.RequestID, got.RequestID, "%s: request_id", why)
	require.Equal(t, want.CorrelationID, got.CorrelationID, "%s: correlation_id", why)
	require.Equal(t, want.AggregateID, got.AggregateID, "%s: aggregate_id", why)
}

// retryDecision is a failed attempt that comes back after delay.
func retryDecision(now time.Time, delay time.Duration, retries int) outbox.FailureDecision {
	return outbox.FailureDecision{
		Status: outbox.Pending, NextAttemptAt: now.Add(delay), RetryCount: retries,
		Code: "QUEUE_UNAVAILABLE", Message: "enqueue: redis connection refused", Class: outbox.ClassTransient,
	}
}

// finalDecision is a failed attempt that gives up.
func finalDecision(now time.Time, retries int) outbox.FailureDecision {
	return outbox.FailureDecision{
		Status: outbox.Failed, NextAttemptAt: now, RetryCount: retries, Final: true,
		Code: "PAYLOAD_REJECTED", Message: "enqueue: payload rejected", Class: outbox.ClassPermanent,
	}
}
