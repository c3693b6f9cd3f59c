package relay_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/relay"
)

type ctxKey struct{}

// recordingTracer records each StartBatch and the result its end got.
type recordingTracer struct {
	mu      sync.Mutex
	batches []relay.ClaimedBatch
	ended   []relay.BatchResult
}

func (r *recordingTracer) StartBatch(ctx context.Context, b relay.ClaimedBatch) (context.Context, func(relay.BatchResult, error)) {
	r.mu.Lock()
	r.batches = append(r.batches, b)
	r.mu.Unlock()
	return context.WithValue(ctx, ctxKey{}, "batch"), func(res relay.BatchResult, _ error) {
		r.mu.Lock()
		r.ended = append(r.ended, res)
		r.mu.Unlock()
	}
}

// The tracer sees each non-empty batch once, with its claim times, before
// publishing (the publisher gets the tracer's context) and is told the
// result; an empty claim starts nothing, so an idle relay traces nothing.
// The lag entries carry each event's trace_parent for the exemplars.
func TestBatchTracerWrapsEachClaimedBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{BatchSize: 2})
	tr := &recordingTracer{}
	var seen []any
	pub := publishFunc(func(ctx context.Context, n int) { seen = append(seen, ctx.Value(ctxKey{})) }, b)
	r, err := relay.New(b.store, pub, b.clock, relay.Config{Owner: "relay-test", BatchSize: 2}, relay.Options{Observer: b.obs, Tracer: tr})
	require.NoError(t, err)

	n, err := r.RunOnce(t.Context(), r.Owner(0))
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, tr.batches, "an empty claim is not traced")

	b.seed(t, 3)
	for range 3 {
		_, err := r.RunOnce(t.Context(), r.Owner(0))
		require.NoError(t, err)
	}
	require.Len(t, tr.batches, 2, "batches of 2 and 1")
	require.Len(t, tr.batches[0].Events, 2)
	require.Equal(t, "relay-test/0", tr.batches[0].Owner)
	require.False(t, tr.batches[0].ClaimStart.IsZero())
	require.Equal(t, []any{"batch", "batch"}, seen, "the publisher runs under the tracer's context")
	require.Equal(t, []int{2, 1}, []int{tr.ended[0].Delivered, tr.ended[1].Delivered})
	require.Len(t, tr.ended[0].LagTraceParents, 2)
}

// spyPublisher calls seen with each Publish's context, then b's publisher.
type spyPublisher struct {
	seen func(ctx context.Context, n int)
	next interface {
		Publish(context.Context, []outbox.Envelope) []error
	}
}

func (p spyPublisher) Publish(ctx context.Context, envs []outbox.Envelope) []error {
	p.seen(ctx, len(envs))
	return p.next.Publish(ctx, envs)
}

func publishFunc(seen func(ctx context.Context, n int), b *testBundle) spyPublisher {
	return spyPublisher{seen: seen, next: b.pub}
}
