package devices_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/core/tasks"
	"github.com/july/template/examples/devices"
)

// A worker crashes mid-task and its Asynq message is lost (deleted here,
// as a Redis failover would): nothing would ever deliver the task again.
// Once the lease expired, the relay's task-recovery sweep returns the task
// to Pending and re-enqueues it, and a worker resumes and finishes it,
// every row decided exactly once.
func TestSweepFinishesTaskWhoseWorkerCrashedAndMessageWasLost(t *testing.T) {
	t.Parallel()
	// The relay's own worker crashes once, after two chunks.
	var crashed atomic.Bool
	v := newEnvOpts(t, envOpts{relay: true, fakeClock: true, afterChunk: func(done int64) error {
		if done >= 4 && crashed.CompareAndSwap(false, true) {
			return errCrash
		}
		return nil
	}})
	csv, valid, invalid := takeoverCSV("RC")
	r, id := v.upload(t, "user-1", "upload-recover-01", csv)
	require.Equal(t, http.StatusAccepted, r.Status, "body %s", r.Body)
	require.Eventually(t, crashed.Load, waitGenerous, 20*time.Millisecond, "the worker never ran task %s", id)

	var eventID string
	require.NoError(t, v.db.NewRaw("SELECT event_id::text FROM tb_outbox_event WHERE aggregate_id = ?", id).Scan(t.Context(), &eventID))
	opt, err := asynq.ParseRedisURI(v.redis.URL)
	require.NoError(t, err)
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = insp.Close() })
	// The failed run's message goes to asynq's retry set once the handler
	// returned; lose it there.
	require.Eventually(t, func() bool { return insp.DeleteTask(v.queue, eventID) == nil }, 10*time.Second, 20*time.Millisecond,
		"delete asynq task %s in queue %s", eventID, v.queue)
	_, err = insp.GetTaskInfo(v.queue, eventID)
	require.ErrorIs(t, err, asynq.ErrTaskNotFound, "the message is gone")

	mid := v.getTask(t, "user-1", id)
	require.Equal(t, tasks.Processing, mid.Status, "rule: the crashed run still holds its lease")

	v.clock.Advance(devices.DefaultLeaseFor + time.Second) // the lease expires
	var got tasks.View
	require.Eventually(t, func() bool {
		got = v.getTask(t, "user-1", id)
		return got.Status.Terminal()
	}, waitGenerous, 50*time.Millisecond, "task %s never finished after its message was lost", id)
	requireExactlyOnce(t, v, id, valid, invalid)
}
