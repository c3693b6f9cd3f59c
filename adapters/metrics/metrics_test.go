package metrics_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// REGRESSION: events committed two hours ago whose retries back
// off into the future showed outbox_oldest_pending_age_seconds 0.
func TestOldestPendingAgeRisesDuringOutage(t *testing.T) {
	t.Parallel()

	store := memory.NewOutboxStore()
	ctx := t.Context()
	now := t0.Add(2 * time.Hour)
	for range 2 {
		ev, err := outbox.New(outbox.NewParams{
			EventID: uuid.NewString(), EventType: "order.created", PayloadVersion: 1,
			AggregateType: "order", AggregateID: "o1", ResourceType: "order", ResourceID: "o1",
			RequestID: "req-1", Payload: map[string]int{"n": 1}, Now: t0,
		})
		require.NoError(t, err)
		require.NoError(t, store.Append(ctx, ev))
	}
	claimed, err := store.Claim(ctx, ports.ClaimParams{Owner: "relay-a", Limit: 2, LeaseFor: time.Minute, Now: now})
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	_, err = store.Fail(ctx, "relay-a", now, []ports.FailItem{{
		Ref: ports.LeaseRef{ID: claimed[0].ID, Token: claimed[0].Lease.Token},
		Decision: outbox.FailureDecision{Status: outbox.Pending, NextAttemptAt: now.Add(10 * time.Minute), RetryCount: 9,
			Code: "QUEUE_UNAVAILABLE", Class: outbox.ClassTransient},
	}})
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	require.NoError(t, metrics.RegisterOutboxStats(reg, store, ports.ClockFunc(func() time.Time { return now }), slog.Default()))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP outbox_oldest_due_age_seconds How long the most overdue pending outbox row has been due (relay lag); rows backing off are not due.
# TYPE outbox_oldest_due_age_seconds gauge
outbox_oldest_due_age_seconds 0
# HELP outbox_oldest_pending_age_seconds Now minus the due time (created_at, or not_before when delayed) of the oldest undelivered (pending or in-flight) outbox row; rises during any outage.
# TYPE outbox_oldest_pending_age_seconds gauge
outbox_oldest_pending_age_seconds 7200
`), "outbox_oldest_pending_age_seconds", "outbox_oldest_due_age_seconds"))
}

func TestDeliveryLagHistogram(t *testing.T) {
	t.Parallel()

	reg := prometheus.NewRegistry()
	m := metrics.NewRelayMetrics(reg)
	m.Batch(relay.BatchResult{Claimed: 2, Delivered: 2, Lags: []time.Duration{200 * time.Millisecond, 2 * time.Minute}})
	m.Batch(relay.BatchResult{Claimed: 3, Retried: 3, RetryCodes: map[string]int{"QUEUE_UNAVAILABLE": 3}})
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP outbox_delivery_failures_total Failed delivery attempts by outcome (retry, or final: the event is now failed, alert) and error_code.
# TYPE outbox_delivery_failures_total counter
outbox_delivery_failures_total{error_code="QUEUE_UNAVAILABLE",outcome="retry"} 3
`), "outbox_delivery_failures_total"), "retries by error code")
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "outbox_delivery_lag_seconds" {
			h := f.GetMetric()[0].GetHistogram()
			require.Equal(t, uint64(2), h.GetSampleCount())
			require.InDelta(t, 120.2, h.GetSampleSum(), 1e-9)
			return
		}
	}
	t.Fatal("outbox_delivery_lag_seconds not registered")
}

func TestClaimsByResult(t *testing.T) {
	t.Parallel()

	reg := prometheus.NewRegistry()
	m := metrics.NewRelayMetrics(reg)
	for _, rows := range []int{0, 0, 3, 10, 10, 10} {
		m.Claim(rows, 10)
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP outbox_claims_total Claims by result: full (the batch size), short (fewer rows: the backlog ran out, or other relays held them) or empty.
# TYPE outbox_claims_total counter
outbox_claims_total{result="empty"} 2
outbox_claims_total{result="full"} 3
outbox_claims_total{result="short"} 1
`), "outbox_claims_total"))
}

func TestDependencyUp(t *testing.T) {
	t.Parallel()

	reg := prometheus.NewRegistry()
	probes := []ports.Probe{
		{Name: "postgres", Check: func(context.Context) error { return nil }},
		{Name: "redis", Check: func(context.Context) error { return errors.New("connection refused") }},
		{Name: "hangs", Check: func(ctx context.Context) error { <-ctx.Done(); time.Sleep(time.Hour); return nil }},
		{Name: "panics", Check: func(context.Context) error { panic("boom") }},
	}
	require.NoError(t, metrics.RegisterProbes(reg, "api", probes, ports.SystemClock))
	start := time.Now()
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP dependency_up 1 when the dependency's readiness probe answers within 2s, 0 when it does not (read at scrape time).
# TYPE dependency_up gauge
dependency_up{component="api",dependency="hangs"} 0
dependency_up{component="api",dependency="panics"} 0
dependency_up{component="api",dependency="postgres"} 1
dependency_up{component="api",dependency="redis"} 0
`)))
	require.Less(t, time.Since(start), metrics.ProbeTimeout+time.Second, "a hanging probe is abandoned after ProbeTimeout")
}

// A delivered event written under a trace leaves its trace_id as the
// exemplar of its lag bucket; an untraced one leaves none.
func TestDeliveryLagExemplarNamesTheProducerTrace(t *testing.T) {
	t.Parallel()

	reg := prometheus.NewRegistry()
	m := metrics.NewRelayMetrics(reg)
	m.Batch(relay.BatchResult{Claimed: 2, Delivered: 2,
		Lags:            []time.Duration{200 * time.Millisecond, 2 * time.Minute},
		LagTraceParents: []string{"00-4bf92f3577b34da6a50f33bcbfe0c9a9-00f067aa0ba902b7-01", ""}})
	families, err := reg.Gather()
	require.NoError(t, err)
	var exemplars []string
	for _, f := range families {
		if f.GetName() != "outbox_delivery_lag_seconds" {
			continue
		}
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			if ex := b.GetExemplar(); ex != nil {
				for _, l := range ex.GetLabel() {
					exemplars = append(exemplars, l.GetName()+"="+l.GetValue())
				}
			}
		}
	}
	require.Equal(t, []string{"trace_id=4bf92f3577b34da6a50f33bcbfe0c9a9"}, exemplars)
}

// service_build_info names the build with its labels.
func TestBuildInfo(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, metrics.RegisterBuildInfo(reg, "relay", metrics.BuildInfo{Version: "v1.2.0", Commit: "abc123", TemplateVersion: "def456", GoVersion: "go1.26.10"}))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP service_build_info Always 1; the labels name the build: the service's version and commit, the template version and the Go version.
# TYPE service_build_info gauge
service_build_info{commit="abc123",component="relay",go_version="go1.26.10",template_version="def456",version="v1.2.0"} 1
`)))
}
