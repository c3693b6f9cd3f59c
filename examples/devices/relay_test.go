package devices_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/sweep"
	"github.com/july/template/core/tasks"
	"github.com/july/template/examples/devices"
)

// relayOptions is the relay side of apps/relay on a private queue: the
// asynq module with its worker, the domain's consumer, an outbox relay
// and the task-recovery sweep over the domain's task table. The queue's
// keys are removed after the worker stopped.
func relayOptions(t *testing.T, v *env) fx.Option {
	t.Helper()
	part, err := devices.RelayWithAfterChunk(domain.RelayDeps{DB: v.db, Clock: v.appClock, Logger: v.log}, v.opts.afterChunk)
	require.NoError(t, err)
	// Registered before the app starts, so it runs after the app stopped.
	q := v.redis.AsynqQueue(t, "devices")
	v.queue = q
	return fx.Options(
		fx.Supply(queue.ModuleConfig{
			RedisURL:  v.redis.URL,
			Publisher: queue.Config{Queue: q},
			Server:    queue.ServerConfig{Queues: map[string]int{q: 1}, Concurrency: 2, ShutdownTimeout: 2 * time.Second},
		}),
		queue.Module,
		queue.RunWorker,
		fx.Provide(queue.AsConsumer(func() queue.Consumer { return part.Consumers[0] })),
		fx.Invoke(func(lc fx.Lifecycle, db *bun.DB, pub ports.Publisher, clock ports.Clock) error {
			store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
			if err != nil {
				return err
			}
			r, err := relay.New(store, pub, clock, relay.Config{Owner: "devices-test-relay", PollInterval: 50 * time.Millisecond},
				relay.Options{Logger: v.log})
			if err != nil {
				return err
			}
			lc.Append(fx.Hook{OnStart: r.Start, OnStop: r.Stop})
			return nil
		}),
		// apps/relay's task-recovery sweep over the domain's task tables.
		fx.Invoke(func(lc fx.Lifecycle, clock ports.Clock) error {
			s, err := sweep.NewTaskRecovery(part.TaskTables, clock, sweep.TaskRecoveryConfig{Every: sweep.MinTaskRecoveryEvery, Logger: v.log})
			if err != nil {
				return err
			}
			lc.Append(fx.Hook{OnStart: s.Start, OnStop: s.Stop})
			return nil
		}),
	)
}

// End to end: the upload's outbox event goes through the relay and asynq
// to the consumer, which completes the task.
func TestEndToEndThroughRelayAndWorker(t *testing.T) {
	t.Parallel()
	v := newEnv(t, true)

	csv := "device_sn,target_agent_id\nE2E0000001,agent-a\nE2E0000002,agent-b\n,agent-c\n"
	r, id := v.upload(t, "user-e2e", "e2e-upload-0001", csv)
	require.Equal(t, http.StatusAccepted, r.Status, "body %s", r.Body)

	var view tasks.View
	require.Eventually(t, func() bool {
		view = v.getTask(t, "user-e2e", id)
		return view.Status.Terminal()
	}, waitGenerous, 100*time.Millisecond, "task %s never finished (last %+v)", id, view)
	require.Equal(t, tasks.Completed, view.Status)
	require.EqualValues(t, 3, view.TotalCount)
	require.EqualValues(t, 2, view.SuccessCount)
	require.EqualValues(t, 1, view.FailedCount)
	require.Equal(t, 2, v.count(t, "SELECT count(*) FROM ex_devices_assignment WHERE task_id = ?", id))
	require.Eventually(t, func() bool {
		return v.count(t, "SELECT count(*) FROM tb_outbox_event WHERE aggregate_id = ? AND status = 3", id) == 1
	}, 10*time.Second, 50*time.Millisecond, "rule: the event is marked delivered")
	var reqID string
	require.NoError(t, v.db.NewRaw("SELECT request_id FROM tb_outbox_event WHERE aggregate_id = ?", id).Scan(t.Context(), &reqID))
	require.Equal(t, "e2e-upload-0001", reqID, "rule: the event carries the upload's request id")
}
