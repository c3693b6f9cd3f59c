package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func consumeFlags(fs *flag.FlagSet) func(context.Context, common, io.Writer) error {
	var p consumeParams
	fs.IntVar(&p.events, "events", 20_000, "tasks drained by the worker in the throughput scenario")
	fs.IntVar(&p.concurrency, "concurrency", 10, "asynq worker concurrency (WORKER_CONCURRENCY's default)")
	fs.IntVar(&p.rate, "rate", 1000, "offered load in tasks/s in the latency scenario")
	fs.DurationVar(&p.duration, "duration", 10*time.Second, "how long the latency scenario offers its load")
	return func(ctx context.Context, c common, out io.Writer) error { return consume(ctx, c, out, p) }
}

type consumeParams struct {
	events, concurrency, rate int
	duration                  time.Duration
}

// countingRecorder counts the writes behind the evidence middleware.
type countingRecorder struct {
	ports.ConsumptionRecorder
	writes, rows atomic.Int64
}

func (r *countingRecorder) RecordConsumed(ctx context.Context, cs []ports.Consumption) error {
	r.writes.Add(1)
	r.rows.Add(int64(len(cs)))
	return r.ConsumptionRecorder.RecordConsumed(ctx, cs)
}

// consume measures what consumption evidence (queue.WithEvidence) costs a
// worker: drain throughput of a no-op consumer (the worst case: the
// evidence is all the work there is) and enqueue-to-consumed latency at a
// steady load, each with the evidence off and on, interleaved run by run.
// The relay's side is unchanged by the evidence, so the latency delta is
// the commit-to-consumed delta. The records are written in the
// background (queue.Evidence), so latency is taken when the handler chain
// returns, as the queue sees it.
func consume(ctx context.Context, c common, out io.Writer, p consumeParams) error {
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
	type result struct {
		rate, perWrite float64
		p50, p99       time.Duration
	}
	results := map[bool][]result{}
	for run := range c.runs {
		for _, evidence := range []bool{false, true} {
			rec := &countingRecorder{ConsumptionRecorder: store}
			rate, err := e.consumeDrain(ctx, p, evidence, rec)
			if err != nil {
				return err
			}
			perWrite := 0.0
			if w := rec.writes.Load(); w > 0 {
				perWrite = float64(rec.rows.Load()) / float64(w)
			}
			lat, err := e.consumeLatency(ctx, p, evidence, store)
			if err != nil {
				return err
			}
			fmt.Fprintf(slogWriter, "consume run %d evidence=%v: %.0f tasks/s, %.1f records per write, latency p50 %s p99 %s\n",
				run+1, evidence, rate, perWrite, lat[0], lat[1])
			results[evidence] = append(results[evidence], result{rate, perWrite, lat[0], lat[1]})
		}
	}
	med := func(ev bool, f func(result) float64) float64 {
		var xs []float64
		for _, r := range results[ev] {
			xs = append(xs, f(r))
		}
		return median(xs)
	}
	fmt.Fprintf(out, "\n| evidence | drain (tasks/s, %d tasks, concurrency %d) | records per INSERT | latency p50 (ms) at %d/s | p99 (ms) |\n|---|---:|---:|---:|---:|\n",
		p.events, p.concurrency, p.rate)
	for _, ev := range []bool{false, true} {
		fmt.Fprintf(out, "| %v | %.0f | %.1f | %.2f | %.2f |\n", ev,
			med(ev, func(r result) float64 { return r.rate }), med(ev, func(r result) float64 { return r.perWrite }),
			med(ev, func(r result) float64 { return float64(r.p50) / 1e6 }), med(ev, func(r result) float64 { return float64(r.p99) / 1e6 }))
	}
	off, on := med(false, func(r result) float64 { return r.rate }), med(true, func(r result) float64 { return r.rate })
	fmt.Fprintf(out, "\nWith evidence a no-op consumer drains at %.2fx (%.1f µs more per task on this machine); a consumer that does real work pays the same absolute cost.\n",
		on/off, (1/on-1/off)*1e6)
	return nil
}

// worker prepares an asynq server on a fresh queue whose no-op consumer
// calls done after the evidence (if any) is written; start runs it.
func (e *env) worker(p consumeParams, evidence bool, rec ports.ConsumptionRecorder, done func(env outbox.Envelope)) (q string, start func() error, stop func(), err error) {
	q = "bench_consume_" + randomHex(4)
	var opts []queue.MuxOption
	log := slog.New(slog.NewTextHandler(slogWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var ev *queue.Evidence
	if evidence {
		ev = queue.NewEvidence(rec, 0, log)
		opts = append(opts, queue.WithEvidence(ev, nil))
	}
	mux, err := queue.NewMux(log, []queue.Consumer{{EventType: "order.placed",
		Handler: queue.Handle(func(context.Context, outbox.Envelope, orderPlaced) error { return nil })}}, opts...)
	if err != nil {
		return "", nil, nil, err
	}
	mux.Use(func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			err := next.ProcessTask(ctx, t)
			if err == nil {
				var env outbox.Envelope
				_ = json.Unmarshal(t.Payload(), &env)
				done(env)
			}
			return err
		})
	})
	srv := queue.NewServer(e.redis, queue.ServerConfig{Queues: map[string]int{q: 1}, Concurrency: p.concurrency, Logger: log})
	started := false
	start = func() error { started = true; return srv.Start(mux) }
	stop = func() {
		if started {
			srv.Shutdown()
		}
		if ev != nil {
			ev.Close()
		}
		ins := asynq.NewInspector(e.redis)
		_ = ins.DeleteQueue(q, true)
		_ = ins.Close()
	}
	return q, start, stop, nil
}

func benchEnvelope(now time.Time) outbox.Envelope {
	id := uuid.NewString()
	b, _ := json.Marshal(orderPlaced{OrderID: "ord-" + id[:8], CustomerID: "cus-1", AmountCents: 1299, Currency: "CNY", Items: 1})
	return outbox.Envelope{EventID: id, EventType: "order.placed", PayloadVersion: 1, AggregateType: "order", AggregateID: id[:8],
		RequestID: "req-" + id[:8], CorrelationID: id, OccurredAt: now, Payload: b}
}

// consumeDrain enqueues p.events tasks, then starts the worker and times
// the drain.
func (e *env) consumeDrain(ctx context.Context, p consumeParams, evidence bool, rec ports.ConsumptionRecorder) (float64, error) {
	var n atomic.Int64
	all := make(chan struct{})
	q, start, stop, err := e.worker(p, evidence, rec, func(outbox.Envelope) {
		if n.Add(1) == int64(p.events) {
			close(all)
		}
	})
	if err != nil {
		return 0, err
	}
	defer stop()
	cl := asynq.NewClient(e.redis)
	defer cl.Close()
	enq, err := queue.NewPublisher(cl, queue.Config{Queue: q, PublishConcurrency: 16})
	if err != nil {
		return 0, err
	}
	envs := make([]outbox.Envelope, p.events)
	for i := range envs {
		envs[i] = benchEnvelope(time.Now())
	}
	for i := 0; i < len(envs); i += 500 {
		for _, err := range enq.Publish(ctx, envs[i:min(i+500, len(envs))]) {
			if err != nil {
				return 0, err
			}
		}
	}
	began := time.Now()
	if err := start(); err != nil {
		return 0, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return float64(p.events) / time.Since(began).Seconds(), nil
}

// consumeLatency offers p.rate tasks/s for p.duration and returns the p50
// and p99 enqueue-to-consumed latency.
func (e *env) consumeLatency(ctx context.Context, p consumeParams, evidence bool, rec ports.ConsumptionRecorder) ([2]time.Duration, error) {
	var (
		mu   sync.Mutex
		lats []time.Duration
	)
	q, start, stop, err := e.worker(p, evidence, rec, func(env outbox.Envelope) {
		d := time.Since(env.OccurredAt)
		mu.Lock()
		lats = append(lats, d)
		mu.Unlock()
	})
	if err != nil {
		return [2]time.Duration{}, err
	}
	defer stop()
	if err := start(); err != nil {
		return [2]time.Duration{}, err
	}
	cl := asynq.NewClient(e.redis)
	defer cl.Close()
	enq, err := queue.NewPublisher(cl, queue.Config{Queue: q})
	if err != nil {
		return [2]time.Duration{}, err
	}
	want := int(float64(p.rate) * p.duration.Seconds())
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	began := time.Now()
	sent := 0
	for sent < want {
		<-tick.C
		target := min(int(time.Since(began).Seconds()*float64(p.rate)), want)
		for ; sent < target; sent++ {
			if errs := enq.Publish(ctx, []outbox.Envelope{benchEnvelope(time.Now())}); errs[0] != nil {
				return [2]time.Duration{}, errs[0]
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := len(lats)
		mu.Unlock()
		if got >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lats)
	return [2]time.Duration{percentile(lats, 0.5), percentile(lats, 0.99)}, nil
}
