package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/bench/internal/procstat"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

func drainFlags(fs *flag.FlagSet) func(context.Context, common, io.Writer) error {
	events := fs.Int("events", 20_000, "events pre-filled before each drain")
	loops := fs.String("loops", "1,4", "claim loop counts to try (relay.Config.Loops)")
	batches := fs.String("batch", "100,500", "batch sizes to try (relay.Config.BatchSize)")
	relays := fs.String("relays", "template", "comma-separated relays to try: template (core/relay over pgoutbox and the asynq queue), bare (a hand-written claim 100, 8 concurrent enqueues, mark loop: the yardstick), river (River jobs worked into asynq), watermill (a watermill-sql subscriber enqueuing into asynq)")
	riverWorkers := fs.String("river-workers", "2000", "river: MaxWorkers values to try on the default queue")
	watermillBatches := fs.String("watermill-batch", "500", "watermill: subscriber batch sizes to try (DefaultPostgreSQLSchema.SubscribeBatchSize)")
	tracingModes := fs.String("tracing", "off", "tracing modes to try: off, on (100% sampled spans, linked to each event's producer, exported in batches to a discarding exporter), or off,on")
	return func(ctx context.Context, c common, out io.Writer) error {
		ls, err := parseInts(*loops, "loops")
		if err != nil {
			return err
		}
		bs, err := parseInts(*batches, "batch")
		if err != nil {
			return err
		}
		rw, err := parseInts(*riverWorkers, "river-workers")
		if err != nil {
			return err
		}
		wb, err := parseInts(*watermillBatches, "watermill-batch")
		if err != nil {
			return err
		}
		var modes []bool
		for _, m := range strings.Split(*tracingModes, ",") {
			switch strings.TrimSpace(m) {
			case "off":
				modes = append(modes, false)
			case "on":
				modes = append(modes, true)
			default:
				return fmt.Errorf("-tracing %q: want off, on or off,on", *tracingModes)
			}
		}
		var rs []string
		for _, r := range strings.Split(*relays, ",") {
			switch r = strings.TrimSpace(r); r {
			case relayTemplate, relayBare, relayRiver, relayWatermill:
				rs = append(rs, r)
			default:
				return fmt.Errorf("-relays %q: want a comma-separated list of template, bare, river, watermill", *relays)
			}
		}
		return drain(ctx, c, out, *events, scenarios(ls, bs, modes, rs, rw, wb))
	}
}

const (
	relayTemplate  = "template"
	relayBare      = "bare"
	relayRiver     = "river"
	relayWatermill = "watermill"
)

// scenario is one drain configuration.
type scenario struct {
	relay        string
	loops, batch int // template and bare; batch is also watermill's
	traced       bool
	workers      int // river's MaxWorkers
}

func (sc scenario) relayName() string {
	if sc.relay == relayRiver {
		return fmt.Sprintf("river (%d workers)", sc.workers)
	}
	return sc.relay
}

// scenarios lists the configurations in the order each run tries them.
// River and Watermill have no claim loops: they run once per run, in the
// first loop count's turn.
func scenarios(loops, batches []int, modes []bool, relays []string, riverWorkers, watermillBatches []int) []scenario {
	var out []scenario
	for i, l := range loops {
		for _, r := range relays {
			switch r {
			case relayBare: // fixed batch, never traced
				out = append(out, scenario{relay: r, loops: l, batch: bareBatch})
			case relayTemplate:
				for _, b := range batches {
					for _, tr := range modes {
						out = append(out, scenario{relay: r, loops: l, batch: b, traced: tr})
					}
				}
			case relayRiver:
				for _, w := range riverWorkers {
					if i == 0 {
						out = append(out, scenario{relay: r, workers: w})
					}
				}
			case relayWatermill:
				for _, b := range watermillBatches {
					if i == 0 {
						out = append(out, scenario{relay: r, batch: b})
					}
				}
			}
		}
	}
	return out
}

type drainResult struct {
	rates   []float64 // events/s per run
	cpuUS   []float64 // this process's CPU µs per event
	pgUS    []float64 // this database's Postgres backends, CPU µs per event
	redisUS []float64 // redis-server CPU µs per event
	machine []float64 // machine busy share
}

func drain(ctx context.Context, c common, out io.Writer, n int, scenarios []scenario) error {
	e, err := newEnv(ctx, c)
	if err != nil {
		return err
	}
	defer e.Close()
	db, err := e.openRelay(ctx, postgres.DefaultMaxOpenConns)
	if err != nil {
		return err
	}
	defer db.Close()
	if slices.ContainsFunc(scenarios, func(sc scenario) bool { return sc.relay == relayRiver }) {
		if err := riverMigrate(ctx, e); err != nil {
			return err
		}
	}

	results := map[scenario]*drainResult{}
	// Runs are the outer loop so noise from other load spreads over every
	// scenario instead of hitting one.
	for run := range c.runs {
		for _, sc := range scenarios {
			if err := ctx.Err(); err != nil {
				return err
			}
			m, err := drainOnce(ctx, e, db, n, sc)
			if err != nil {
				return fmt.Errorf("drain run %d %s: %w", run+1, sc.label(), err)
			}
			fmt.Fprintf(slogWriter, "drain run %d %s: %.0f events/s, CPU µs/event relay %.1f postgres %.1f redis %.1f, machine busy %.0f%%\n",
				run+1, sc.label(), m.rate, m.cpuUS, m.pgUS, m.redisUS, 100*m.busy)
			r := results[sc]
			if r == nil {
				r = &drainResult{}
				results[sc] = r
			}
			r.rates = append(r.rates, m.rate)
			r.cpuUS = append(r.cpuUS, m.cpuUS)
			r.pgUS = append(r.pgUS, m.pgUS)
			r.redisUS = append(r.redisUS, m.redisUS)
			r.machine = append(r.machine, m.busy)
		}
	}

	// River and Watermill are compared with the bare relay at its largest
	// loop count, and the template with the best River configuration.
	var bareTop, riverBest *scenario
	for i, sc := range scenarios {
		switch {
		case sc.relay == relayBare && (bareTop == nil || sc.loops > bareTop.loops):
			bareTop = &scenarios[i]
		case sc.relay == relayRiver && (riverBest == nil || median(results[sc].rates) > median(results[*riverBest].rates)):
			riverBest = &scenarios[i]
		}
	}
	fmt.Fprintf(out, "### drain: %d pre-filled events, publish concurrency %d, median of %d runs\n\n", n, c.publishConcurrency, c.runs)
	fmt.Fprintln(out, "| relay | loops | batch | tracing | events/s (median) | runs | CPU µs/event: relay / postgres / redis | machine busy | target |")
	fmt.Fprintln(out, "|---|---:|---:|---|---:|---|---|---:|---|")
	for _, sc := range scenarios {
		r := results[sc]
		med := median(r.rates)
		loops, batch, tracing := strconv.Itoa(sc.loops), strconv.Itoa(sc.batch), onOff(sc.traced)
		var target []string
		switch sc.relay {
		case relayBare:
			target = append(target, "yardstick")
		case relayTemplate:
			if b, ok := results[scenario{relay: relayBare, loops: sc.loops, batch: bareBatch}]; ok {
				ratio := med / median(b.rates)
				target = append(target, fmt.Sprintf("%.2fx bare (≥ 1.0): %s", ratio, verdict(ratio >= 1)))
			}
			if riverBest != nil {
				ratio := med / median(results[*riverBest].rates)
				target = append(target, fmt.Sprintf("%.2fx %s (≥ 2.0): %s", ratio, riverBest.relayName(), verdict(ratio >= 2)))
			}
		case relayRiver, relayWatermill:
			loops, tracing = "—", "—"
			if sc.relay == relayRiver {
				batch = "—"
			}
			if bareTop != nil {
				target = append(target, fmt.Sprintf("comparison: %.2fx bare (%d loops)", med/median(results[*bareTop].rates), bareTop.loops))
			}
		}
		if len(target) == 0 {
			target = append(target, "—")
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %.0f | %s | %.1f / %.1f / %.1f | %.0f%% | %s |\n",
			sc.relayName(), loops, batch, tracing, med, joinFloats(r.rates, "%.0f"), median(r.cpuUS), median(r.pgUS), median(r.redisUS), 100*median(r.machine), strings.Join(target, "; "))
	}
	fmt.Fprintln(out)
	return nil
}

// label names a scenario in progress lines and errors.
func (sc scenario) label() string {
	switch sc.relay {
	case relayRiver:
		return fmt.Sprintf("relay=river workers=%d", sc.workers)
	case relayWatermill:
		return fmt.Sprintf("relay=watermill batch=%d", sc.batch)
	}
	return fmt.Sprintf("relay=%s loops=%d batch=%d tracing=%s", sc.relay, sc.loops, sc.batch, onOff(sc.traced))
}

// drainMeasure is one drain's throughput and where the CPU went.
type drainMeasure struct {
	rate                 float64
	cpuUS, pgUS, redisUS float64
	busy                 float64
}

// drainOnce fills the table with n due events and times the relay until
// every one is marked Delivered (River and Watermill: completed, acked).
func drainOnce(ctx context.Context, e *env, db *bun.DB, n int, sc scenario) (m drainMeasure, err error) {
	loops, batch := sc.loops, sc.batch
	if err := e.reset(ctx, db); err != nil {
		return m, err
	}
	evs, err := newEvents(n, time.Now().Add(-time.Second))
	if err != nil {
		return m, err
	}
	if sc.traced {
		withTraceParents(evs) // as written by a traced API: one link per event
	}
	q, err := e.newQueue()
	if err != nil {
		return m, err
	}
	defer q.Close()
	// River and Watermill pre-fill their own tables with the same events.
	switch sc.relay {
	case relayRiver:
		return riverDrainOnce(ctx, e, db, q, evs, sc.workers)
	case relayWatermill:
		return watermillDrainOnce(ctx, e, db, q, evs, sc.batch)
	}
	if err := prefill(ctx, db, evs, 500); err != nil {
		return m, err
	}
	if sc.relay == relayBare {
		return bareDrainOnce(ctx, e, db, q, n, loops)
	}
	store, err := pgoutbox.NewStore(db, relayStoreConfig)
	if err != nil {
		return m, err
	}
	cnt := newCounter(n)
	clock := ports.ClockFunc(time.Now)
	var rs ports.OutboxRelayStore = store
	var pub ports.Publisher = q
	opts := relay.Options{Observer: cnt, Logger: quietLogger}
	if sc.traced { // as apps/relay wires it with tracing on
		tp := benchTracerProvider()
		defer func() { _ = tp.Shutdown(context.Background()) }()
		rs, pub, opts.Tracer = tracing.Store(rs, tp), tracing.Publisher(pub, tp), tracing.NewRelay(tp)
	}
	r, err := relay.New(rs, pub, clock, relay.Config{Owner: "outboxbench", Loops: loops, BatchSize: batch}, opts)
	if err != nil {
		return m, err
	}

	s0, u0 := procstat.SampleServers(ctx, db), sampleUsage()
	start := time.Now()
	if err := r.Start(ctx); err != nil {
		return m, err
	}
	select {
	case <-cnt.done:
	case <-time.After(5 * time.Minute):
		err = fmt.Errorf("only %d of %d delivered after 5 minutes", cnt.delivered.Load(), n)
	case <-ctx.Done():
		err = ctx.Err()
	}
	elapsed := time.Since(start)
	proc, busy := sampleUsage().since(u0)
	pg, rds := procstat.SampleServers(ctx, db).Since(s0)
	if serr := r.Stop(context.Background()); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return m, err
	}
	if o := cnt.other.Load(); o != 0 {
		return m, fmt.Errorf("%d events were retried, failed or lost; a clean drain has none", o)
	}
	st, err := store.Stats(ctx, clock.Now())
	if err != nil {
		return m, err
	}
	if st.Pending != 0 || st.Delivering != 0 {
		return m, fmt.Errorf("after the drain %d pending and %d delivering remain", st.Pending, st.Delivering)
	}
	perEvent := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	return drainMeasure{rate: float64(n) / elapsed.Seconds(), cpuUS: perEvent(proc), pgUS: perEvent(pg), redisUS: perEvent(rds), busy: busy}, nil
}

// quietLogger drops the relay's routine logs; errors still surface as
// missing deliveries.
var quietLogger = slog.New(slog.NewTextHandler(slogWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))

// bareDrainOnce times the bare relay over the pre-filled table.
func bareDrainOnce(ctx context.Context, e *env, db *bun.DB, q *scratchQueue, n, loops int) (m drainMeasure, err error) {
	pool, err := e.openPgx(ctx, loops)
	if err != nil {
		return m, err
	}
	defer pool.Close()
	s0, u0 := procstat.SampleServers(ctx, db), sampleUsage()
	start := time.Now()
	err = bareDrain(ctx, pool, q.client, q.name, loops, n)
	elapsed := time.Since(start)
	proc, busy := sampleUsage().since(u0)
	pg, rds := procstat.SampleServers(ctx, db).Since(s0)
	if err != nil {
		return m, err
	}
	perEvent := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	return drainMeasure{rate: float64(n) / elapsed.Seconds(), cpuUS: perEvent(proc), pgUS: perEvent(pg), redisUS: perEvent(rds), busy: busy}, nil
}
