package pgoutbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// An append under a span stores outbox.append's W3C context; retries,
// a final failure, an operator's replay and a lease recovery all keep it,
// so every delivery links back to the same request.
func TestTraceContextIsStoredAndKept(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, req := tp.Tracer("test").Start(t.Context(), "request")

	ev := newOutboxEvent(t)
	require.NoError(t, pgoutbox.Append(ctx, db, ev))
	req.End()
	var appendSpan tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "outbox.append" {
			appendSpan = s
		}
	}
	require.Equal(t, req.SpanContext().SpanID(), appendSpan.Parent.SpanID(), "outbox.append is a child of the caller's span")
	require.Equal(t, trace.SpanKindProducer, appendSpan.SpanKind, "semconv: the message's creation is a PRODUCER span")
	attrs := map[string]string{}
	for _, a := range appendSpan.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	for k, v := range map[string]string{"messaging.system": "asynq", "messaging.operation.type": "create",
		"messaging.operation.name": "append", "messaging.message.id": ev.EventID} {
		require.Equal(t, v, attrs[k], "outbox.append attribute %s", k)
	}
	want := "00-" + appendSpan.SpanContext.TraceID().String() + "-" + appendSpan.SpanContext.SpanID().String() + "-01"

	claim := func(now time.Time, lease time.Duration) outbox.Event {
		t.Helper()
		got, err := store.Claim(t.Context(), ports.ClaimParams{Owner: "relay-a", Limit: 1, LeaseFor: lease, Now: now})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, want, got[0].TraceParent, "claim reads the stored context")
		require.Equal(t, want, got[0].Envelope().TraceParent, "and the envelope carries it")
		return got[0]
	}
	get := func() outbox.Event {
		t.Helper()
		got, err := store.Get(t.Context(), ev.EventID)
		require.NoError(t, err)
		return got
	}
	fail := func(c outbox.Event, now time.Time, d outbox.FailureDecision) {
		t.Helper()
		_, err := store.Fail(t.Context(), "relay-a", now, []ports.FailItem{{Ref: ports.LeaseRef{ID: c.ID, Token: c.Lease.Token}, Decision: d}})
		require.NoError(t, err)
	}

	c := claim(outboxT0, time.Minute)
	fail(c, outboxT0, outbox.FailureDecision{Status: outbox.Pending, NextAttemptAt: outboxT0, RetryCount: 1, Code: "X"})
	c = claim(outboxT0, time.Minute)
	fail(c, outboxT0, outbox.FailureDecision{Status: outbox.Failed, NextAttemptAt: outboxT0, RetryCount: 2, Code: "X"})
	require.Equal(t, want, get().TraceParent, "a failed row keeps it")

	_, err = store.Replay(t.Context(), ports.ReplayParams{EventIDs: []string{ev.EventID},
		Request: outbox.ReplayRequest{Operator: "ops-1", Reason: "下游已恢复", BatchID: "b-1"}, Now: outboxT0.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, want, get().TraceParent, "a replay keeps it")

	claim(outboxT0.Add(time.Hour), time.Second)
	res, err := store.RecoverExpired(t.Context(), ports.RecoverParams{Now: outboxT0.Add(2 * time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, res.Recovered())
	require.Equal(t, want, get().TraceParent, "a recovery keeps it")
}

func TestAppendWithoutSpanStoresNoTraceContext(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)

	plain, given, bad := newOutboxEvent(t), newOutboxEvent(t), newOutboxEvent(t)
	given.TraceParent, given.TraceState = "00-4bf92f3577b34da6a50f33bcbfe0c9a9-00f067aa0ba902b7-01", "vendor=a1"
	require.NoError(t, pgoutbox.Append(t.Context(), db, plain, given))
	for ev, want := range map[string][2]string{plain.EventID: {"", ""}, given.EventID: {given.TraceParent, given.TraceState}} {
		got, err := store.Get(t.Context(), ev)
		require.NoError(t, err)
		require.Equal(t, want, [2]string{got.TraceParent, got.TraceState})
	}

	bad.TraceParent = "00-not a traceparent"
	var verr *outbox.ValidationError
	require.ErrorAs(t, pgoutbox.Append(t.Context(), db, bad), &verr)
	require.Equal(t, "trace_parent", verr.Field)
}
