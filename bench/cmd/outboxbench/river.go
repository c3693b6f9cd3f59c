package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/uptrace/bun"

	"github.com/july/template/bench/internal/procstat"
	"github.com/july/template/core/outbox"
)

// River as a relay: the comparison. The events are pre-filled as
// River jobs (untimed, like the outbox's pre-fill), then a River client
// works them, each Work enqueueing one asynq task shaped as bare.go's.
// Tuned as in the issue: FetchCooldown 2 ms, FetchPollInterval 10 ms, and
// -river-workers on the default queue.
const (
	riverFetchCooldown     = 2 * time.Millisecond
	riverFetchPollInterval = 10 * time.Millisecond
	// riverConns is the pool River gets: the template's pool size.
	riverConns = 20
)

// riverEventArgs carries the fields an outbox row has.
type riverEventArgs struct {
	EventID        string          `json:"event_id"`
	EventType      string          `json:"event_type"`
	PayloadVersion int             `json:"payload_version"`
	AggregateType  string          `json:"aggregate_type"`
	AggregateID    string          `json:"aggregate_id"`
	ResourceType   string          `json:"resource_type"`
	ResourceID     string          `json:"resource_id"`
	RequestID      string          `json:"request_id"`
	Payload        json.RawMessage `json:"payload"`
}

func (riverEventArgs) Kind() string { return "outboxbench_event" }

// riverWorker enqueues each job's event into the scratch queue.
type riverWorker struct {
	river.WorkerDefaults[riverEventArgs]
	client    *asynq.Client
	queueName string
}

func (w *riverWorker) Work(ctx context.Context, job *river.Job[riverEventArgs]) error {
	a := job.Args
	_, err := w.client.EnqueueContext(ctx, asynq.NewTask(a.EventType, a.Payload), asynq.Queue(w.queueName), asynq.TaskID(a.EventID), asynq.MaxRetry(25))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue %s: %w", a.EventID, err)
	}
	return nil
}

// riverMigrate creates River's tables in the scratch database.
func riverMigrate(ctx context.Context, e *env) error {
	pool, err := e.openPgx(ctx, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: quietLogger})
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate up: %w", err)
	}
	return nil
}

// riverDrainOnce pre-fills evs as River jobs, then times a River client
// until every job is completed. Completion is counted from the client's
// job_completed subscription, which River emits after its completer has
// written the completed state, so "done" means persisted, like the
// outbox's Delivered mark.
func riverDrainOnce(ctx context.Context, e *env, db *bun.DB, q *scratchQueue, evs []outbox.Event, workers int) (m drainMeasure, err error) {
	n := len(evs)
	if _, err := db.ExecContext(ctx, "TRUNCATE river_job"); err != nil {
		return m, fmt.Errorf("truncate river_job: %w", err)
	}
	pool, err := e.openPgx(ctx, riverConns)
	if err != nil {
		return m, err
	}
	defer pool.Close()
	ws := river.NewWorkers()
	river.AddWorker(ws, &riverWorker{client: q.client, queueName: q.name})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPollInterval,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		Logger:            slog.New(slog.NewTextHandler(slogWriter, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return m, fmt.Errorf("river client: %w", err)
	}
	if err := riverPrefill(ctx, pool, client, evs, 1000); err != nil {
		return m, err
	}
	// Big enough for every event, so none is dropped.
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 1000,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled, river.EventKindJobSnoozed}})
	defer cancelSub()

	s0, u0 := procstat.SampleServers(ctx, db), sampleUsage()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return m, fmt.Errorf("start river client: %w", err)
	}
	completed, other := 0, 0
	timeout := time.After(5 * time.Minute)
	for err == nil && completed < n {
		select {
		case ev := <-events:
			if ev.Kind == river.EventKindJobCompleted {
				completed++
			} else {
				other++
			}
		case <-timeout:
			err = fmt.Errorf("only %d of %d River jobs completed after 5 minutes", completed, n)
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	elapsed := time.Since(start)
	proc, busy := sampleUsage().since(u0)
	pg, rds := procstat.SampleServers(ctx, db).Since(s0)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if serr := client.Stop(stopCtx); serr != nil && err == nil {
		err = fmt.Errorf("stop river client: %w", serr)
	}
	if err != nil {
		return m, err
	}
	if other != 0 {
		return m, fmt.Errorf("%d River jobs failed, snoozed or were cancelled; a clean drain has none", other)
	}
	var left int
	if err := db.NewRaw("SELECT count(*) FROM river_job WHERE state <> 'completed'").Scan(ctx, &left); err != nil {
		return m, fmt.Errorf("count unfinished river jobs: %w", err)
	}
	if left != 0 {
		return m, fmt.Errorf("after the drain %d River jobs are not completed", left)
	}
	perEvent := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	return drainMeasure{rate: float64(n) / elapsed.Seconds(), cpuUS: perEvent(proc), pgUS: perEvent(pg), redisUS: perEvent(rds), busy: busy}, nil
}

// riverPrefill inserts evs as River jobs, chunk per InsertMany, then
// refreshes the planner statistics as prefill does for the outbox.
func riverPrefill(ctx context.Context, pool *pgxpool.Pool, client *river.Client[pgx.Tx], evs []outbox.Event, chunk int) error {
	params := make([]river.InsertManyParams, 0, chunk)
	for i := 0; i < len(evs); i += chunk {
		params = params[:0]
		for _, ev := range evs[i:min(i+chunk, len(evs))] {
			params = append(params, river.InsertManyParams{Args: riverEventArgs{
				EventID: ev.EventID, EventType: ev.EventType, PayloadVersion: ev.PayloadVersion,
				AggregateType: ev.AggregateType, AggregateID: ev.AggregateID,
				ResourceType: ev.ResourceType, ResourceID: ev.ResourceID, RequestID: ev.RequestID,
				Payload: ev.Payload,
			}})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return fmt.Errorf("river pre-fill: %w", err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE river_job"); err != nil {
		return fmt.Errorf("vacuum river_job: %w", err)
	}
	return nil
}
