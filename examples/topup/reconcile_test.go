package topup_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/postgres/pgperiodic"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/periodic"
	"github.com/july/template/examples/topup"
)

type settable struct{ ns atomic.Int64 }

func (c *settable) Now() time.Time                         { return time.Unix(0, c.ns.Load()).UTC() }
func (c *settable) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (c *settable) Set(t time.Time)                        { c.ns.Store(t.UnixNano()) }

// The daily reconciliation: two relays' runners pass over 02:00 China
// time (18:00 UTC) and commit that day's occurrence once, under its
// stable id; after three days of downtime (catch-up Once) one occurrence
// stands for the missed ones; the consumer runs each occurrence once,
// however often it is delivered, and reports an order still uncredited.
func TestDailyReconciliationRunsEachDayOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	ctx := t.Context()
	e.create(t, "agent-1", "topup-req-0900", createBody) // never credited: no worker runs

	clock := &settable{}
	day := time.Date(2026, 12, 6, 17, 59, 0, 0, time.UTC) // 01:59 in China
	clock.Set(day)
	var runners []*periodic.Runner
	for range 2 {
		store, err := pgperiodic.NewStore(e.db)
		require.NoError(t, err)
		r, err := periodic.NewRunner(store, []periodic.Command{topup.ReconcileCommandDecl()}, clock, periodic.RunnerConfig{})
		require.NoError(t, err)
		runners = append(runners, r)
	}
	pass := func() {
		for _, r := range runners {
			_, err := r.RunOnce(ctx)
			require.NoError(t, err)
		}
	}
	ids := func() []string {
		var out []string
		require.NoError(t, e.db.NewSelect().TableExpr("tb_outbox_event").ColumnExpr("event_id::text").
			Where("event_type = ?", topup.EventReconcileDue).OrderExpr("id").Scan(ctx, &out))
		return out
	}
	pass()
	require.Empty(t, ids(), "nothing before 02:00")
	clock.Set(day.Add(2 * time.Minute))
	pass()
	first := day.Add(time.Minute) // 18:00 UTC = 02:00 China
	require.Equal(t, []string{periodic.ID(topup.ReconcileCommand, first)}, ids(), "02:00 committed once, under its stable id")

	clock.Set(day.Add(3*24*time.Hour + 5*time.Minute)) // three days down
	pass()
	latest := first.Add(3 * 24 * time.Hour)
	require.Equal(t, []string{periodic.ID(topup.ReconcileCommand, first), periodic.ID(topup.ReconcileCommand, latest)}, ids(),
		"catch-up Once: the latest missed day only")

	store, err := pgoutbox.NewStore(e.db, pgoutbox.Config{})
	require.NoError(t, err)
	ev, err := store.Get(ctx, periodic.ID(topup.ReconcileCommand, latest))
	require.NoError(t, err)
	require.Equal(t, ev.EventID, ev.RequestID, "request_id is the stable command id")
	b, err := json.Marshal(ev.Envelope())
	require.NoError(t, err)
	logs := &testinfra.LogBuffer{}
	rec, err := topup.NewReconciler(e.db, nil, slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, rec.Consumer().Handler.ProcessTask(context.Background(), asynq.NewTask(topup.EventReconcileDue, b)))
	}
	require.Equal(t, 1, e.count(t, "tb_outbox_consumption", "consumer = ?", topup.ReconcileConsumer), "one reconciliation per occurrence")
	require.Equal(t, 1, strings.Count(logs.String(), "orders still waiting for their credit"), "the uncredited order is reported, once: %s", logs.String())
}
