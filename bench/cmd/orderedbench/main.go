// Command orderedbench measures what per-aggregate ordered delivery
// (outbox.NewParams.Ordered) costs the relay. Each run pre-fills a fresh
// database with -aggregates x -per events, starts N real relay processes
// (apps/relay, built once, their worker off) and an in-process Asynq
// consumer whose handler does nothing but whose consumption records
// (queue.Evidence) go to the same database, as the relay's own worker's
// would; ordered chains advance only on those records. A run ends when
// every event that can be consumed has its record; events/s is that count
// over the time since the relays started.
//
// Modes:
//
//	unordered  Ordered=false: the baseline, same consumer, same records
//	ordered    Ordered=true
//	stuck      Ordered=true, and -stuck aggregates (spread evenly) blocked
//	           at their first event, set Failed before the relays start:
//	           the drain of the others, and what the blocked rows cost a
//	           claim afterwards
//
// Besides the drain it times the relay's claim statement (pgoutbox
// Store.Claim of -batch rows, rolled back, median of 7) on the full
// backlog before the relays start ("first claim") and on what is left
// after the drain, vacuumed ("idle claim": nothing pending, or the stuck
// aggregates' blocked rows). The consumer also reports the per-aggregate
// step: the time from handling one event of an aggregate to handling its
// next (p50 over all aggregates), the round trip that bounds an ordered
// chain. -explain prints EXPLAIN ANALYZE of the idle
// claim of the first stuck run.
//
//	go run ./bench/cmd/orderedbench -runs 3 -relays 1,2
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/bench/internal/relayproc"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redisurl"
)

const eventType = "bench.ordered"

type config struct {
	aggregates, per, stuck, batch, loops, concurrency int
	poll, taskCheck                                   time.Duration
	interleaved, explain                              bool
	base, redisURL, bin                               string
}

func main() {
	var c config
	flag.IntVar(&c.aggregates, "aggregates", 1000, "aggregates")
	flag.IntVar(&c.per, "per", 20, "events per aggregate")
	flag.IntVar(&c.stuck, "stuck", 100, "aggregates blocked at their first event in mode stuck")
	modes := flag.String("modes", "unordered,ordered,stuck", "modes to run: unordered, ordered, stuck")
	relays := flag.String("relays", "1,2", "relay process counts to try")
	runs := flag.Int("runs", 3, "runs per mode and relay count (median and range reported)")
	flag.IntVar(&c.batch, "batch", 500, "RELAY_BATCH_SIZE for every relay")
	flag.IntVar(&c.loops, "loops", 2, "RELAY_LOOPS for every relay")
	flag.DurationVar(&c.poll, "poll", 500*time.Millisecond, "RELAY_POLL_INTERVAL for every relay")
	flag.IntVar(&c.concurrency, "concurrency", 20, "the consumer's Asynq concurrency")
	flag.DurationVar(&c.taskCheck, "task-check", 0, "the consumer's TaskCheckInterval, as WORKER_TASK_CHECK_INTERVAL sets it (how long an idle worker sleeps, x0.5..x1.5; 0: asynq's default 1s)")
	order := flag.String("order", "sequential", "commit order of the pre-fill: sequential (aggregate after aggregate, each one's events together) or interleaved (first event of every aggregate, then the second, ...)")
	flag.BoolVar(&c.explain, "explain", false, "print EXPLAIN ANALYZE of the idle claim of the first stuck run")
	flag.StringVar(&c.base, "db", relayproc.EnvOr("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "a Postgres role that may CREATE DATABASE")
	flag.StringVar(&c.redisURL, "redis", relayproc.EnvOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis for Asynq")
	flag.Parse()
	switch *order {
	case "sequential":
	case "interleaved":
		c.interleaved = true
	default:
		fmt.Fprintln(os.Stderr, "orderedbench: -order is sequential or interleaved")
		os.Exit(2)
	}
	if err := run(context.Background(), c, *modes, *relays, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "orderedbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, modesFlag, relaysFlag string, runs int) error {
	var counts []int
	for _, s := range strings.Split(relaysFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-relays %q: want counts like 1,2", relaysFlag)
		}
		counts = append(counts, n)
	}
	modes := strings.Split(modesFlag, ",")
	for _, m := range modes {
		if m != "unordered" && m != "ordered" && m != "stuck" {
			return fmt.Errorf("-modes: unknown mode %q", m)
		}
	}
	if c.stuck < 1 || c.stuck > c.aggregates {
		return fmt.Errorf("-stuck %d: want 1..%d", c.stuck, c.aggregates)
	}
	dir, err := os.MkdirTemp("", "orderedbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.bin, err = relayproc.Build(ctx, dir); err != nil {
		return err
	}
	fmt.Printf("%d aggregates x %d events, %s pre-fill; relays: RELAY_BATCH_SIZE=%d RELAY_LOOPS=%d RELAY_POLL_INTERVAL=%s; consumer concurrency %d, TaskCheckInterval %s\n\n",
		c.aggregates, c.per, map[bool]string{false: "sequential", true: "interleaved"}[c.interleaved], c.batch, c.loops, c.poll, c.concurrency,
		map[bool]string{true: "asynq's default (1s)", false: c.taskCheck.String()}[c.taskCheck == 0])
	type key struct {
		mode   string
		relays int
	}
	all := map[key][]result{}
	for _, m := range modes {
		for _, n := range counts {
			for i := range runs {
				r, err := once(ctx, c, m, n, c.explain && m == "stuck" && i == 0 && n == counts[0])
				if err != nil {
					return fmt.Errorf("%s, %d relays, run %d: %w", m, n, i+1, err)
				}
				fmt.Fprintf(os.Stderr, "%s relays=%d run=%d: %d events in %.2fs = %.0f/s; claims full/short/empty %.0f/%.0f/%.0f, %.1f rows/claim; first claim %.1fms, idle claim %.2fms; order violations %d; per-aggregate step p50/p90 %.0f/%.0fms\n",
					m, n, i+1, r.events, r.elapsed.Seconds(), r.rate(), r.claims["full"], r.claims["short"], r.claims["empty"], r.rowsPerClaim,
					ms(r.firstClaim), ms(r.idleClaim), r.violations, ms(r.step50), ms(r.step90))
				all[key{m, n}] = append(all[key{m, n}], r)
			}
		}
	}
	fmt.Printf("| mode | relays | events | events/s median (range) | vs unordered | drain s | claims full / short / empty | rows/claim | first claim ms | idle claim ms | order violations | step p50 ms |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, m := range modes {
		for _, n := range counts {
			rs := all[key{m, n}]
			slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.rate(), b.rate()) })
			med := rs[len(rs)/2]
			vs := "—"
			if base := all[key{"unordered", n}]; m != "unordered" && len(base) > 0 {
				vs = fmt.Sprintf("%.2f×", med.rate()/base[len(base)/2].rate())
			}
			viol := 0
			for _, r := range rs {
				viol += r.violations
			}
			fmt.Printf("| %s | %d | %d | %.0f (%.0f–%.0f) | %s | %.2f | %.0f / %.0f / %.0f | %.1f | %.1f | %.2f | %d | %.0f |\n",
				m, n, med.events, med.rate(), rs[0].rate(), rs[len(rs)-1].rate(), vs, med.elapsed.Seconds(),
				med.claims["full"], med.claims["short"], med.claims["empty"], med.rowsPerClaim,
				ms(median(rs, func(r result) time.Duration { return r.firstClaim })),
				ms(median(rs, func(r result) time.Duration { return r.idleClaim })), viol,
				ms(median(rs, func(r result) time.Duration { return r.step50 })))
		}
	}
	return nil
}

type result struct {
	events                int // consumed in the drain
	elapsed               time.Duration
	claims                map[string]float64
	rowsPerClaim          float64
	firstClaim, idleClaim time.Duration
	violations            int // a consumer saw an aggregate's event before an earlier one
	step50, step90        time.Duration
}

func (r result) rate() float64 { return float64(r.events) / r.elapsed.Seconds() }

func once(ctx context.Context, c config, mode string, relays int, explain bool) (result, error) {
	db, err := relayproc.FreshDB(ctx, c.base, "ob_")
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	ordered := mode != "unordered"
	if err := prefill(ctx, db.DB, c, ordered); err != nil {
		return result{}, err
	}
	want := c.aggregates * c.per
	var blocked []string
	if mode == "stuck" {
		if blocked, err = block(ctx, db.DB, c); err != nil {
			return result{}, err
		}
		want -= c.stuck * c.per
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE tb_outbox_event"); err != nil {
		return result{}, err
	}
	var res result
	if res.firstClaim, _, err = claimCost(ctx, db.DB, c.batch, false); err != nil {
		return result{}, err
	}

	queueName := "ob_" + db.Name[3:]
	cons, err := startConsumer(ctx, db.DB, c.redisURL, queueName, c.concurrency, c.taskCheck)
	if err != nil {
		return result{}, err
	}
	defer cons.stop()
	procs, err := relayproc.Start(ctx, c.bin, db.URL, c.redisURL, queueName, relays,
		"RELAY_BATCH_SIZE="+strconv.Itoa(c.batch), "RELAY_LOOPS="+strconv.Itoa(c.loops), "RELAY_POLL_INTERVAL="+c.poll.String())
	if err != nil {
		return result{}, err
	}
	defer relayproc.Stop(procs)
	start := time.Now()
	deadline := start.Add(10 * time.Minute)
	for {
		if err := db.NewRaw("SELECT count(*) FROM tb_outbox_consumption").Scan(ctx, &res.events); err != nil {
			return result{}, err
		}
		if res.events >= want {
			break
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("%d of %d events consumed after 10 minutes", res.events, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.elapsed = time.Since(start)
	res.claims = map[string]float64{}
	var rows, batches float64
	for _, p := range procs {
		m, err := relayproc.Scrape(p.Admin, "outbox_claims_total")
		if err != nil {
			return result{}, err
		}
		relayproc.Claims(m, res.claims)
		batches += m["outbox_claim_batch_size_count"]
		rows += m["outbox_claim_batch_size_sum"]
	}
	if batches > 0 {
		res.rowsPerClaim = rows / batches
	}
	relayproc.Stop(procs)
	cons.stop()
	res.violations = cons.violations()
	res.step50, res.step90 = cons.step()
	if res.events != want {
		return result{}, fmt.Errorf("%d events consumed, want %d", res.events, want)
	}
	if mode == "stuck" {
		// The blocked aggregates must not have moved: their first event
		// Failed, the rest Pending, nothing consumed.
		var moved int
		if err := db.NewRaw(`SELECT count(*) FROM tb_outbox_event AS e
			WHERE e.aggregate_id IN (?) AND (e.status NOT IN (1, 4) OR EXISTS (SELECT 1 FROM tb_outbox_consumption AS c WHERE c.event_id = e.event_id))`,
			bun.List(blocked)).Scan(ctx, &moved); err != nil {
			return result{}, err
		}
		if moved > 0 {
			return result{}, fmt.Errorf("%d events of blocked aggregates were delivered or consumed", moved)
		}
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE tb_outbox_event"); err != nil {
		return result{}, err
	}
	var plan string
	if res.idleClaim, plan, err = claimCost(ctx, db.DB, c.batch, explain); err != nil {
		return result{}, err
	}
	if explain {
		fmt.Fprintf(os.Stderr, "EXPLAIN ANALYZE of the idle claim, %d blocked rows pending:\n%s\n", c.stuck*(c.per-1), plan)
	}
	return res, nil
}

// prefill appends the events through pgoutbox.Append, 1,000 per
// statement, in commit order: aggregate after aggregate (sequential), or
// round-robin (interleaved). Every event has the same due time, so the
// claim takes them in id order.
func prefill(ctx context.Context, db *bun.DB, c config, ordered bool) error {
	now := time.Now()
	total := c.aggregates * c.per
	evs := make([]outbox.Event, 0, 1000)
	for i := range total {
		a, k := i/c.per, i%c.per
		if c.interleaved {
			a, k = i%c.aggregates, i/c.aggregates
		}
		ev, err := outbox.New(outbox.NewParams{
			EventID: uuid.NewString(), EventType: eventType, PayloadVersion: 1,
			AggregateType: "order", AggregateID: strconv.Itoa(a), ResourceType: "order", ResourceID: strconv.Itoa(a),
			RequestID: "req-" + strconv.Itoa(i), CorrelationID: "corr-" + strconv.Itoa(a),
			Payload: map[string]any{"seq": k, "amount_cents": 1500}, Now: now, Ordered: ordered,
		})
		if err != nil {
			return err
		}
		if evs = append(evs, ev); len(evs) == cap(evs) || i == total-1 {
			if err := pgoutbox.Append(ctx, db, evs...); err != nil {
				return err
			}
			evs = evs[:0]
		}
	}
	return nil
}

// block fails the first event of c.stuck aggregates spread evenly over
// the id range, as an event whose delivery attempts ran out would be, and
// returns their aggregate ids.
func block(ctx context.Context, db *bun.DB, c config) ([]string, error) {
	ids := make([]string, c.stuck)
	for i := range ids {
		ids[i] = strconv.Itoa(i * c.aggregates / c.stuck)
	}
	res, err := db.ExecContext(ctx, `UPDATE tb_outbox_event
		SET status = 4, last_error_code = 'BENCH_BLOCKED', last_error_message = 'orderedbench: blocked on purpose', updated_at = now()
		WHERE id IN (SELECT min(id) FROM tb_outbox_event WHERE ordered AND aggregate_type = 'order' AND aggregate_id IN (?) GROUP BY aggregate_id)`,
		bun.List(ids))
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n != int64(c.stuck) {
		return nil, fmt.Errorf("blocked %d aggregates, want %d", n, c.stuck)
	}
	return ids, nil
}

// claimCost times pgoutbox's Claim of limit rows in a transaction rolled
// back, so nothing changes: the median of 7 after one warm-up. With
// explain it also returns EXPLAIN (ANALYZE, BUFFERS) of the statement.
func claimCost(ctx context.Context, db *bun.DB, limit int, explain bool) (time.Duration, string, error) {
	var sqlText string
	hooked := db.WithQueryHook(captureHook{&sqlText})
	var times []time.Duration
	for i := range 8 {
		tx, err := hooked.BeginTx(ctx, nil)
		if err != nil {
			return 0, "", err
		}
		store, err := pgoutbox.NewStore(tx, pgoutbox.Config{})
		if err != nil {
			_ = tx.Rollback()
			return 0, "", err
		}
		t0 := time.Now()
		_, err = store.Claim(ctx, ports.ClaimParams{Owner: "orderedbench-probe", Limit: limit, LeaseFor: time.Minute, Now: time.Now()})
		d := time.Since(t0)
		_ = tx.Rollback()
		if err != nil {
			return 0, "", err
		}
		if i > 0 {
			times = append(times, d)
		}
	}
	slices.Sort(times)
	if !explain {
		return times[len(times)/2], "", nil
	}
	if sqlText == "" {
		return 0, "", errors.New("the claim's SQL was not captured")
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+sqlText)
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return 0, "", err
		}
		plan.WriteString(line + "\n")
	}
	return times[len(times)/2], plan.String(), rows.Err()
}

// captureHook keeps the last formatted claim statement.
type captureHook struct{ sql *string }

func (h captureHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if strings.HasPrefix(e.Query, "WITH due AS") {
		*h.sql = e.Query
	}
	return ctx
}

func (captureHook) AfterQuery(context.Context, *bun.QueryEvent) {}

// consumer is an in-process Asynq worker whose handler only checks that
// an aggregate's events arrive in order; queue.Evidence writes its
// consumption records, as the relay's own worker does.
type consumer struct {
	stop func()

	mu   sync.Mutex
	last map[string]int       // aggregate id -> highest seq seen
	at   map[string]time.Time // aggregate id -> when its last event was handled
	gaps []time.Duration      // per aggregate, from one event's handling to the next's
	bad  int
}

// step returns the median and 90th percentile of the time from one
// event of an aggregate to its next: the per-aggregate round trip.
func (c *consumer) step() (p50, p90 time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.gaps) == 0 {
		return 0, 0
	}
	slices.Sort(c.gaps)
	return c.gaps[len(c.gaps)/2], c.gaps[len(c.gaps)*9/10]
}

func (c *consumer) violations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bad
}

func startConsumer(_ context.Context, db *bun.DB, redisURL, queueName string, concurrency int, taskCheck time.Duration) (*consumer, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	topo, err := redisurl.Parse(redisURL)
	if err != nil {
		return nil, err
	}
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{AsynchronousCommit: true}) // as adapters/postgres's fx store
	if err != nil {
		return nil, err
	}
	c := &consumer{last: map[string]int{}, at: map[string]time.Time{}}
	ev := queue.NewEvidence(store, 0, log)
	mux, err := queue.NewMux(log, []queue.Consumer{{EventType: eventType,
		Handler: queue.Handle(func(_ context.Context, env outbox.Envelope, p struct {
			Seq int `json:"seq"`
		}) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			if last, ok := c.last[env.AggregateID]; ok && p.Seq < last {
				c.bad++
			}
			c.last[env.AggregateID] = max(c.last[env.AggregateID], p.Seq)
			now := time.Now()
			if t, ok := c.at[env.AggregateID]; ok {
				c.gaps = append(c.gaps, now.Sub(t))
			}
			c.at[env.AggregateID] = now
			return nil
		})}}, queue.WithEvidence(ev, nil))
	if err != nil {
		ev.Close()
		return nil, err
	}
	srv := queue.NewServer(queue.ConnOpt(topo), queue.ServerConfig{
		Queues: map[string]int{queueName: 1}, Concurrency: concurrency, Logger: log, ShutdownTimeout: 2 * time.Second,
		TaskCheckInterval: taskCheck, // WORKER_TASK_CHECK_INTERVAL in the relay's worker
	})
	if err := srv.Start(mux); err != nil {
		ev.Close()
		return nil, err
	}
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			srv.Shutdown()
			ev.Close()
		})
	}
	return c, nil
}

func median(rs []result, f func(result) time.Duration) time.Duration {
	ds := make([]time.Duration, len(rs))
	for i, r := range rs {
		ds[i] = f(r)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
