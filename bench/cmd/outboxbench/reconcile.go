package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

func reconcileFlags(fs *flag.FlagSet) func(context.Context, common, io.Writer) error {
	var p reconcileParams
	fs.IntVar(&p.delivered, "delivered", 100_000, "delivered events in the table, delivered over the last hour")
	fs.IntVar(&p.unconsumed, "unconsumed", 1000, "of them, events no consumer recorded; their tasks wait in the queue")
	fs.IntVar(&p.lost, "lost", 100, "of the unconsumed, events whose task the queue lost")
	return func(ctx context.Context, c common, out io.Writer) error { return reconcile(ctx, c, out, p) }
}

type reconcileParams struct{ delivered, unconsumed, lost int }

// reconcile measures relay.Reconciler's passes over a table of delivered
// events: the first pass of a starting relay (it scans every delivery of
// the horizon), a pass that finds the lost tasks, and the steady pass of a
// running relay (no new delivery; only the unconsumed events are checked).
// The evidence lag (a wait, not work) is set to 1 ms so the figures are
// the passes' work alone.
func reconcile(ctx context.Context, c common, out io.Writer, p reconcileParams) error {
	if p.lost > p.unconsumed || p.unconsumed > p.delivered {
		return fmt.Errorf("want -lost <= -unconsumed <= -delivered")
	}
	e, err := newEnv(ctx, c)
	if err != nil {
		return err
	}
	defer e.Close()
	db, store, err := e.relayStore(ctx, 10)
	if err != nil {
		return err
	}
	defer db.Close()
	now := time.Now()
	evs, err := newEvents(p.delivered, now.Add(-time.Hour))
	if err != nil {
		return err
	}
	if err := prefill(ctx, db, evs, 1000); err != nil {
		return err
	}
	// Delivered over the last hour, in id order; all but the first
	// p.unconsumed consumed.
	if _, err := db.ExecContext(ctx, `UPDATE tb_outbox_event SET status = 3,
		delivered_at = now() - interval '1 hour' + (id * interval '1 hour' / ?)`, p.delivered+1); err != nil {
		return fmt.Errorf("mark delivered: %w", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO tb_outbox_consumption (event_id, consumer, consumed_at)
		SELECT event_id, 'bench', now() FROM tb_outbox_event ORDER BY id OFFSET ?`, p.unconsumed); err != nil {
		return fmt.Errorf("record consumption: %w", err)
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE tb_outbox_event, tb_outbox_consumption"); err != nil {
		return err
	}
	q := "bench_reconcile_" + randomHex(4)
	cl := asynq.NewClient(e.redis)
	defer cl.Close()
	enq, err := queue.NewPublisher(cl, queue.Config{Queue: q, PublishConcurrency: 16})
	if err != nil {
		return err
	}
	defer func() {
		ins := asynq.NewInspector(e.redis)
		_ = ins.DeleteQueue(q, true)
		_ = ins.Close()
	}()
	held := make([]outbox.Envelope, 0, p.unconsumed-p.lost)
	for _, ev := range evs[p.lost:p.unconsumed] { // the first p.lost are the lost ones
		held = append(held, ev.Envelope())
	}
	for _, err := range enq.Publish(ctx, held) {
		if err != nil {
			return err
		}
	}
	inv, err := queue.NewInventory(e.redis, q)
	if err != nil {
		return err
	}
	defer inv.Close()
	rec, err := relay.NewReconciler(relay.ReconcileStores{Outbox: store, Failures: store, Recorder: store, Queue: inv, Pub: enq},
		ports.SystemClock, relay.ReconcileConfig{Grace: time.Second, Horizon: 2 * time.Hour, EvidenceLag: time.Millisecond}, nil,
		slog.New(slog.NewTextHandler(slogWriter, &slog.HandlerOptions{Level: slog.LevelError})))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n| pass | took (ms) | scanned deliveries | watched | republished |\n|---|---:|---:|---:|---:|\n")
	for i, name := range []string{"first (starting relay: the horizon)", "steady (no new delivery)", "steady again"} {
		start := time.Now()
		res := rec.Pass(ctx, relay.TriggerPeriodic)
		took := time.Since(start)
		if res.Err != nil {
			return res.Err
		}
		scanned := 0
		if i == 0 {
			scanned = p.delivered
		}
		fmt.Fprintf(out, "| %s | %.1f | %d | %d | %d |\n", name, float64(took)/1e6, scanned, res.Watched, res.Republished)
	}
	return nil
}
