package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

func latencyFlags(fs *flag.FlagSet) func(context.Context, common, io.Writer) error {
	var p latencyParams
	fs.IntVar(&p.rate, "rate", 1000, "offered load in events/s, one event per committed transaction")
	fs.DurationVar(&p.duration, "duration", 10*time.Second, "how long the load is offered")
	fs.DurationVar(&p.poll, "poll", 50*time.Millisecond, "relay.Config.PollInterval")
	fs.IntVar(&p.loops, "loops", 1, "relay.Config.Loops")
	fs.IntVar(&p.batch, "batch", 100, "relay.Config.BatchSize")
	fs.IntVar(&p.producers, "producers", 16, "concurrent producer transactions (enough to sustain -rate)")
	modes := fs.String("modes", "listen,poll", "wake-up modes: listen (LISTEN plus polling; the writers' pool wakes after commit, the default), listen-intx (LISTEN plus polling; the insert trigger NOTIFYs inside each writer transaction, postgres.Config.NotifyInTx), poll (polling only), "+
		"pooler (writers and relay through -pooler-url, the LISTEN direct: DATABASE_URL the pooler, DATABASE_DIRECT_URL the server) and pooler-only (the LISTEN through the pooler too: deaf, the relay polls every 50 ms)")
	fs.StringVar(&p.poolerURL, "pooler-url", "", "a PgBouncer in transaction mode in front of -database-url's server that forwards every database name (scripts/pgbouncer.sh run sets TEST_PGBOUNCER_URL to one); needed by the pooler modes")
	return func(ctx context.Context, c common, out io.Writer) error {
		for m := range strings.SplitSeq(*modes, ",") {
			switch m {
			case "listen", "listen-intx", "poll":
			case "pooler", "pooler-only":
				if p.poolerURL == "" {
					return fmt.Errorf("-modes %s needs -pooler-url", m)
				}
			default:
				return fmt.Errorf("-modes %q: want a list of listen, listen-intx, poll, pooler, pooler-only", *modes)
			}
			p.modes = append(p.modes, m)
		}
		return latency(ctx, c, out, p)
	}
}

type latencyParams struct {
	rate      int
	duration  time.Duration
	poll      time.Duration
	loops     int
	batch     int
	producers int
	modes     []string
	poolerURL string
}

// latencyRun is one run's percentiles and achieved load.
type latencyRun struct {
	p50, p90, p99, max time.Duration
	offered            float64
}

func latency(ctx context.Context, c common, out io.Writer, p latencyParams) error {
	e, err := newEnv(ctx, c)
	if err != nil {
		return err
	}
	defer e.Close()
	// The producers and the relay use separate pools, as the service and
	// the relay process do in production.
	app, err := e.open(ctx, p.producers)
	if err != nil {
		return err
	}
	defer app.Close()
	appInTx, err := e.openWith(ctx, postgres.Config{MaxOpenConns: p.producers, NotifyInTx: true})
	if err != nil {
		return err
	}
	defer appInTx.Close()
	rdb, err := e.openRelay(ctx, postgres.DefaultMaxOpenConns)
	if err != nil {
		return err
	}
	defer rdb.Close()
	var pooled string
	var appPooled, rdbPooled *bun.DB
	if p.poolerURL != "" {
		if pooled, err = e.viaPooler(p.poolerURL); err != nil {
			return err
		}
		if appPooled, err = postgres.Open(ctx, postgres.Config{URL: pooled, MaxOpenConns: p.producers, MaxIdleConns: p.producers}); err != nil {
			return err
		}
		defer appPooled.Close()
		if rdbPooled, err = e.openRelayAt(ctx, pooled, postgres.DefaultMaxOpenConns); err != nil {
			return err
		}
		defer rdbPooled.Close()
	}

	results := map[string][]latencyRun{}
	for run := range c.runs {
		for _, mode := range p.modes {
			if err := ctx.Err(); err != nil {
				return err
			}
			writers, relayDB, listenURL := app, rdb, e.url
			switch mode {
			case "listen-intx":
				writers = appInTx
			case "poll":
				listenURL = ""
			case "pooler":
				writers, relayDB = appPooled, rdbPooled
			case "pooler-only":
				writers, relayDB, listenURL = appPooled, rdbPooled, pooled
			}
			res, err := latencyOnce(ctx, e, writers, relayDB, p, listenURL)
			if err != nil {
				return fmt.Errorf("latency run %d mode %s: %w", run+1, mode, err)
			}
			fmt.Fprintf(slogWriter, "latency run %d %s: offered %.0f/s p50 %s p99 %s max %s ms\n",
				run+1, mode, res.offered, ms(res.p50), ms(res.p99), ms(res.max))
			results[mode] = append(results[mode], res)
		}
	}

	fmt.Fprintf(out, "### latency: commit-to-enqueue at %d events/s for %s, loops %d, batch %d, poll %s, median of %d runs\n\n",
		p.rate, p.duration, p.loops, p.batch, p.poll, c.runs)
	fmt.Fprintln(out, "| wake-up | offered/s | p50 ms | p90 ms | p99 ms | max ms | p99 per run | target |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---|---|")
	for _, mode := range p.modes {
		rs := results[mode]
		pick := func(f func(latencyRun) time.Duration) time.Duration {
			xs := make([]float64, len(rs))
			for i, r := range rs {
				xs[i] = float64(f(r))
			}
			return time.Duration(median(xs))
		}
		p50 := pick(func(r latencyRun) time.Duration { return r.p50 })
		p99 := pick(func(r latencyRun) time.Duration { return r.p99 })
		offered := make([]float64, len(rs))
		p99s := make([]float64, len(rs))
		for i, r := range rs {
			offered[i], p99s[i] = r.offered, float64(r.p99)/float64(time.Millisecond)
		}
		var target string
		switch mode {
		case "listen", "listen-intx":
			target = fmt.Sprintf("p50 < 1 ms, p99 < 5 ms: %s", verdict(p50 < time.Millisecond && p99 < 5*time.Millisecond))
		case "pooler":
			if direct, ok := results["listen"]; ok {
				xs := make([]float64, len(direct))
				for i, r := range direct {
					xs[i] = float64(r.p50)
				}
				target = fmt.Sprintf("p50 ≤ 2x listen's: %s", verdict(float64(p50) <= 2*median(xs)))
			}
		case "pooler-only":
			limit := postgres.DefaultFallbackPoll + 10*time.Millisecond
			target = fmt.Sprintf("p99 ≤ %s (50 ms polling, not -poll): %s", limit, verdict(p99 <= limit))
		default:
			limit := p.poll + 10*time.Millisecond
			target = fmt.Sprintf("p99 ≤ %s: %s", limit, verdict(p99 <= limit))
		}
		fmt.Fprintf(out, "| %s | %.0f | %s | %s | %s | %s | %s | %s |\n", mode, median(offered), ms(p50),
			ms(pick(func(r latencyRun) time.Duration { return r.p90 })), ms(p99),
			ms(pick(func(r latencyRun) time.Duration { return r.max })), joinFloats(p99s, "%.2f"), target)
	}
	fmt.Fprintln(out)
	return nil
}

// stampingPublisher records when each event's Publish call returned
// successfully, by the event's index.
type stampingPublisher struct {
	ports.Publisher
	index   map[string]int
	enqAt   []atomic.Int64 // unix ns, first success only
	pending atomic.Int64
	done    chan struct{}
}

func (s *stampingPublisher) Publish(ctx context.Context, envs []outbox.Envelope) []error {
	errs := s.Publisher.Publish(ctx, envs)
	now := time.Now().UnixNano()
	for i, env := range envs {
		if i < len(errs) && errs[i] == nil {
			if k, ok := s.index[env.EventID]; ok && s.enqAt[k].CompareAndSwap(0, now) {
				if s.pending.Add(-1) == 0 {
					close(s.done)
				}
			}
		}
	}
	return errs
}

// latencyOnce runs the load once: app's transactions append, a relay on
// rdb delivers, woken by a Listener on listenURL ("" none) that probes
// itself through app.
func latencyOnce(ctx context.Context, e *env, app, rdb *bun.DB, p latencyParams, listenURL string) (latencyRun, error) {
	if err := e.reset(ctx, rdb); err != nil {
		return latencyRun{}, err
	}
	n := int(float64(p.rate) * p.duration.Seconds())
	evs, err := newEvents(n, time.Now())
	if err != nil {
		return latencyRun{}, err
	}
	q, err := e.newQueue()
	if err != nil {
		return latencyRun{}, err
	}
	defer q.Close()
	pub := &stampingPublisher{Publisher: q, index: make(map[string]int, n), enqAt: make([]atomic.Int64, n), done: make(chan struct{})}
	pub.pending.Store(int64(n))
	for i, ev := range evs {
		pub.index[ev.EventID] = i
	}
	store, err := pgoutbox.NewStore(rdb, relayStoreConfig)
	if err != nil {
		return latencyRun{}, err
	}
	r, err := relay.New(store, pub, ports.ClockFunc(time.Now), relay.Config{
		Owner: "outboxbench", Loops: p.loops, BatchSize: p.batch, PollInterval: p.poll,
	}, relay.Options{Logger: quietLogger})
	if err != nil {
		return latencyRun{}, err
	}
	if listenURL != "" {
		l := postgres.NewListenerWith(postgres.ListenerConfig{URL: listenURL, Channel: postgres.OutboxChannel, Notify: r.Notify, Log: quietLogger,
			Probe: func(ctx context.Context, payload string) error {
				_, err := app.ExecContext(ctx, "SELECT pg_notify(?, ?)", postgres.OutboxChannel, payload)
				return err
			}})
		if err := l.Start(ctx); err != nil {
			return latencyRun{}, err
		}
		defer func() { _ = l.Stop(context.Background()) }()
		select {
		case <-l.Ready():
		case <-time.After(10 * time.Second):
			return latencyRun{}, fmt.Errorf("listener not ready after 10s")
		}
		// Wait for the probe's verdict, so the run measures the steady
		// state (heard: woken per commit; deaf: 50 ms polling).
		for deadline := time.Now().Add(postgres.DefaultProbeTimeout + 100*time.Millisecond); !l.Working() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := r.Start(ctx); err != nil {
		return latencyRun{}, err
	}
	defer func() { _ = r.Stop(context.Background()) }()

	commitAt, offered, err := offer(ctx, app, evs, p)
	if err != nil {
		return latencyRun{}, err
	}
	select {
	case <-pub.done:
	case <-time.After(30 * time.Second):
		return latencyRun{}, fmt.Errorf("%d of %d events not enqueued 30s after the load ended", pub.pending.Load(), n)
	case <-ctx.Done():
		return latencyRun{}, ctx.Err()
	}
	lat := make([]time.Duration, n)
	for i := range lat {
		lat[i] = time.Duration(pub.enqAt[i].Load() - commitAt[i])
	}
	slices.Sort(lat)
	return latencyRun{
		p50: percentile(lat, 50), p90: percentile(lat, 90), p99: percentile(lat, 99), max: lat[n-1],
		offered: offered,
	}, nil
}

// offer commits evs one per transaction on a fixed schedule (open loop: a
// late producer does not delay the next event's slot) and returns each
// event's commit-return time in unix ns and the achieved rate.
func offer(ctx context.Context, db *bun.DB, evs []outbox.Event, p latencyParams) ([]int64, float64, error) {
	commitAt := make([]int64, len(evs))
	interval := time.Second / time.Duration(p.rate)
	var (
		next     atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range p.producers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(evs) || ctx.Err() != nil {
					return
				}
				time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
				err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					return pgoutbox.Append(ctx, tx, evs[i])
				})
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				commitAt[i] = time.Now().UnixNano()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, 0, fmt.Errorf("producer: %w", firstErr)
	}
	return commitAt, float64(len(evs)) / time.Since(start).Seconds(), nil
}
