package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/ports"
)

// TestHistoryRecordsAndForgets holds History to asynq's storage: the
// position survives a new client, and Forget deletes the queue's pending,
// scheduled, retrying, archived and completed tasks, and no other queue's.
func TestHistoryRecordsAndForgets(t *testing.T) {
	h, other := newHarness(t), newHarness(t)
	hist, err := queue.NewHistory(h.opt, h.insp, h.queue)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hist.Close() })

	_, ok, err := hist.SeenPosition(t.Context())
	require.NoError(t, err)
	require.False(t, ok, "a new queue has seen no position")
	n, err := hist.Forget(t.Context())
	require.NoError(t, err, "a queue asynq never saw has nothing to forget")
	require.Zero(t, n)

	want := ports.DBPosition{System: "7716678217936074944", Timeline: 3, LSN: 1<<40 + 5}
	require.NoError(t, hist.RecordPosition(t.Context(), want))
	again, err := queue.NewHistory(h.opt, h.insp, h.queue)
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Close() })
	got, ok, err := again.SeenPosition(t.Context())
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, want, got)

	enqueue := func(q string, opts ...asynq.Option) string {
		info, err := h.client.Enqueue(asynq.NewTask("t", nil), append(opts, asynq.Queue(q))...)
		require.NoError(t, err)
		return info.ID
	}
	enqueue(h.queue)
	enqueue(h.queue, asynq.ProcessIn(time.Hour))
	for _, id := range []string{enqueue(h.queue), enqueue(h.queue)} {
		require.NoError(t, h.insp.ArchiveTask(h.queue, id))
	}
	completed, err := h.client.Enqueue(asynq.NewTask("t", nil), asynq.Queue(h.queue), asynq.Retention(time.Hour))
	require.NoError(t, err)
	h.startWorker(t, asynq.HandlerFunc(func(_ context.Context, _ *asynq.Task) error { return nil }), nil)
	h.requireState(t, completed.ID, asynq.TaskStateCompleted)
	kept := enqueue(other.queue)

	n, err = hist.Forget(t.Context())
	require.NoError(t, err)
	require.Equal(t, 4, n, "the scheduled, the two archived and the completed task (the worker ran the pending one)")
	info, err := h.insp.GetQueueInfo(h.queue)
	require.NoError(t, err)
	require.Zero(t, info.Size+info.Completed, "the queue holds nothing after Forget: %+v", info)
	_, err = other.insp.GetTaskInfo(other.queue, kept)
	require.NoError(t, err, "another queue's task is kept")
	got, ok, err = hist.SeenPosition(t.Context())
	require.NoError(t, err)
	require.True(t, ok && got == want, "Forget keeps the recorded position")
}
