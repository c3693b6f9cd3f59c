// Command wakebench measures how soon the real relay's own worker starts
// a committed event's consumer, and what an idle relay process costs.
//
// Each -variant is an apps/relay binary (with optional extra environment)
// started with its worker on (WORKER_ENABLED=true) and every other setting
// at its default, on a fresh database and its own Asynq queue. All the
// variants run at once and each measurement visits them in turn, so a
// busy machine weighs on all of them alike:
//
//   - idle: for -idle, the Redis commands the relay process sends (Redis
//     MONITOR, counted by the process's own connections), the transactions
//     on its database (pg_stat_database, read from another database), and
//     its CPU time (/proc).
//
//   - latency at each of -rates: events committed one per transaction
//     (pgoutbox.Append of an audit.recorded event, which the relay's
//     built-in audit consumer takes) at that rate for -each; latency is
//     the consumption record's time (queue.Evidence: the handler's end, so
//     at least its start) minus the moment the commit returned, both this
//     host's clock.
//
//   - drain: the relay is stopped, -backlog events are committed, the relay
//     started again; events/s until every one has its consumption record.
//
//     go run ./bench/cmd/wakebench -variant before=/tmp/relay-main -variant after=build
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/bench/internal/procstat"
	"github.com/july/template/bench/internal/relayproc"
	"github.com/july/template/core/outbox"
)

type variant struct {
	name, bin string
	env       []string
}

type variants []variant

func (v *variants) String() string { return fmt.Sprint(*v) }

// Set parses name=path[,KEY=VALUE...]; path "build" builds ./apps/relay.
func (v *variants) Set(s string) error {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return errors.New("want name=path[,KEY=VALUE...]")
	}
	parts := strings.Split(rest, ",")
	*v = append(*v, variant{name: name, bin: parts[0], env: parts[1:]})
	return nil
}

type config struct {
	rates          []int
	seconds        time.Duration
	idle           time.Duration
	backlog        int
	writers        int
	base, redisURL string
}

func main() {
	var vs variants
	var c config
	flag.Var(&vs, "variant", "name=path[,KEY=VALUE...] of a relay binary to measure (repeatable; path build: go build ./apps/relay)")
	rates := flag.String("rates", "2,50,1000", "commit rates, events per second")
	flag.DurationVar(&c.seconds, "each", 10*time.Second, "how long each rate is kept up")
	flag.DurationVar(&c.idle, "idle", 15*time.Second, "idle window")
	flag.IntVar(&c.backlog, "backlog", 20000, "events committed before a relay starts, for the drain")
	flag.IntVar(&c.writers, "writers", 8, "committing goroutines")
	flag.StringVar(&c.base, "db", relayproc.EnvOr("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "a Postgres role that may CREATE DATABASE")
	flag.StringVar(&c.redisURL, "redis", relayproc.EnvOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis for Asynq (a single node: MONITOR counts on it)")
	flag.Parse()
	for _, s := range strings.Split(*rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "wakebench: -rates wants counts like 2,50,1000")
			os.Exit(2)
		}
		c.rates = append(c.rates, n)
	}
	if len(vs) == 0 {
		vs = variants{{name: "this", bin: "build"}}
	}
	if err := run(context.Background(), c, vs); err != nil {
		fmt.Fprintln(os.Stderr, "wakebench:", err)
		os.Exit(1)
	}
}

// subject is one variant's relay on its own database and queue.
type subject struct {
	variant
	db    *relayproc.DB
	queue string
	proc  *relayproc.Proc
	res   result
	// lastCommit is when measureRate's last commit returned.
	lastCommit time.Time
}

type result struct {
	idle     idleCost
	latency  map[int][]time.Duration
	achieved map[int]float64 // commits per second reached at each rate
	drain    float64
}

type idleCost struct {
	redis   map[string]int // command -> count in the window
	xacts   int64
	cpu     time.Duration
	seconds float64
}

func run(ctx context.Context, c config, vs variants) error {
	dir, err := os.MkdirTemp("", "wakebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	admin, err := relayproc.OpenDB(c.base)
	if err != nil {
		return err
	}
	defer admin.Close()
	var subs []*subject
	defer func() {
		for _, s := range subs {
			s.stop()
			s.db.Close()
		}
	}()
	for _, v := range vs {
		if v.bin == "build" {
			if v.bin, err = relayproc.Build(ctx, dir); err != nil {
				return err
			}
		}
		db, err := relayproc.FreshDB(ctx, c.base, "wb_")
		if err != nil {
			return err
		}
		s := &subject{variant: v, db: db, queue: "wb_" + db.Name[3:], res: result{latency: map[int][]time.Duration{}, achieved: map[int]float64{}}}
		subs = append(subs, s)
		if err := s.start(ctx, c); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
	}
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Fprintf(os.Stderr, "load average at start: %s\n", load())
	for _, s := range subs {
		if err := s.warm(ctx, c); err != nil {
			return fmt.Errorf("%s: warm-up: %w", s.name, err)
		}
	}
	time.Sleep(3 * time.Second) // let start-up work (first sweeps, heartbeats) pass before the idle window
	for _, s := range subs {
		if s.res.idle, err = s.measureIdle(ctx, c, admin); err != nil {
			return fmt.Errorf("%s: idle: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "%s idle: %.1f redis cmds/s %v, %.1f xacts/s, cpu %.2f%%\n", s.name,
			float64(total(s.res.idle.redis))/s.res.idle.seconds, s.res.idle.redis, float64(s.res.idle.xacts)/s.res.idle.seconds,
			100*s.res.idle.cpu.Seconds()/s.res.idle.seconds)
	}
	for _, rate := range c.rates {
		for _, s := range subs {
			t0 := time.Now()
			lat, err := s.measureRate(ctx, c, rate)
			if err != nil {
				return fmt.Errorf("%s: rate %d/s: %w", s.name, rate, err)
			}
			s.res.latency[rate] = lat
			s.res.achieved[rate] = float64(len(lat)) / s.lastCommit.Sub(t0).Seconds()
			fmt.Fprintf(os.Stderr, "%s %d/s (reached %.0f/s): %d events, p50 %.1f ms, p90 %.1f ms, p99 %.1f ms\n", s.name, rate, s.res.achieved[rate], len(lat), pct(lat, 50), pct(lat, 90), pct(lat, 99))
		}
	}
	for _, s := range subs {
		if s.res.drain, err = s.measureDrain(ctx, c); err != nil {
			return fmt.Errorf("%s: drain: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "%s drain: %.0f events/s\n", s.name, s.res.drain)
	}
	fmt.Printf("load average at the end: %s\n\n", load())
	fmt.Printf("| variant | idle Redis cmds/s | idle Postgres xacts/s | idle CPU %% |")
	for _, r := range c.rates {
		fmt.Printf(" %d/s p50 / p90 / p99 ms |", r)
	}
	fmt.Printf(" drain of %d, events/s | commits/s reached |\n|---|---:|---:|---:|", c.backlog)
	for range c.rates {
		fmt.Printf("---:|")
	}
	fmt.Printf("---:|---|\n")
	for _, s := range subs {
		i := s.res.idle
		fmt.Printf("| %s | %.1f | %.1f | %.2f |", s.name, float64(total(i.redis))/i.seconds, float64(i.xacts)/i.seconds, 100*i.cpu.Seconds()/i.seconds)
		for _, r := range c.rates {
			l := s.res.latency[r]
			fmt.Printf(" %.1f / %.1f / %.1f |", pct(l, 50), pct(l, 90), pct(l, 99))
		}
		var reached []string
		for _, r := range c.rates {
			reached = append(reached, fmt.Sprintf("%.0f", s.res.achieved[r]))
		}
		fmt.Printf(" %.0f | %s |\n", s.res.drain, strings.Join(reached, " / "))
	}
	fmt.Println()
	for _, s := range subs {
		fmt.Printf("%s idle Redis commands in %.0f s: %v\n", s.name, s.res.idle.seconds, s.res.idle.redis)
	}
	return nil
}

func (s *subject) start(ctx context.Context, c config) error {
	procs, err := relayproc.Start(ctx, s.bin, s.db.URL, c.redisURL, s.queue, 1, append([]string{"WORKER_ENABLED=true"}, s.env...)...)
	if err != nil {
		return err
	}
	s.proc = procs[0]
	_, err = relayproc.Scrape(s.proc.Admin) // waits for the admin listener
	return err
}

func (s *subject) stop() {
	if s.proc != nil {
		relayproc.Stop([]*relayproc.Proc{s.proc})
		s.proc = nil
	}
}

func (s *subject) warm(ctx context.Context, c config) error {
	_, err := s.measureRate(ctx, c, 10, 10)
	return err
}

// measureRate commits n events (default rate x -each) at rate per
// second and returns each one's commit-to-consumed latency.
func (s *subject) measureRate(ctx context.Context, c config, rate int, n ...int) ([]time.Duration, error) {
	count := int(float64(rate) * c.seconds.Seconds())
	if len(n) > 0 {
		count = n[0]
	}
	ids := make([]string, count)
	committed := make([]time.Time, count)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	start := time.Now()
	for range min(c.writers, count) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
				ev, err := event()
				if err == nil {
					err = pgoutbox.Append(ctx, s.db.DB, ev)
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				ids[i], committed[i] = ev.EventID, time.Now()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	s.lastCommit = slices.MaxFunc(committed, func(a, b time.Time) int { return a.Compare(b) })
	at, err := waitConsumed(ctx, s.db.DB, ids, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, count)
	for i, id := range ids {
		lat[i] = at[id].Sub(committed[i])
	}
	return lat, nil
}

func (s *subject) measureDrain(ctx context.Context, c config) (float64, error) {
	s.stop()
	ids := make([]string, 0, c.backlog)
	batch := make([]outbox.Event, 0, 1000)
	for i := range c.backlog {
		ev, err := event()
		if err != nil {
			return 0, err
		}
		ids, batch = append(ids, ev.EventID), append(batch, ev)
		if len(batch) == cap(batch) || i == c.backlog-1 {
			if err := pgoutbox.Append(ctx, s.db.DB, batch...); err != nil {
				return 0, err
			}
			batch = batch[:0]
		}
	}
	if _, err := s.db.ExecContext(ctx, "VACUUM ANALYZE tb_outbox_event"); err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := s.start(ctx, c); err != nil {
		return 0, err
	}
	deadline := t0.Add(10 * time.Minute)
	for {
		var n int
		if err := s.db.NewRaw("SELECT count(*) FROM tb_outbox_consumption WHERE event_id IN (?)", bun.List(ids)).Scan(ctx, &n); err != nil {
			return 0, err
		}
		if n >= len(ids) {
			return float64(len(ids)) / time.Since(t0).Seconds(), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d consumed after 10 minutes", n, len(ids))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitConsumed polls until every id has a consumption record and returns
// the earliest record's time of each.
func waitConsumed(ctx context.Context, db *bun.DB, ids []string, limit time.Duration) (map[string]time.Time, error) {
	deadline := time.Now().Add(limit)
	for {
		var rows []struct {
			EventID string    `bun:"event_id"`
			At      time.Time `bun:"at"`
		}
		if err := db.NewRaw("SELECT event_id::text, min(consumed_at) AS at FROM tb_outbox_consumption WHERE event_id IN (?) GROUP BY event_id", bun.List(ids)).Scan(ctx, &rows); err != nil {
			return nil, err
		}
		if len(rows) == len(ids) {
			at := make(map[string]time.Time, len(rows))
			for _, r := range rows {
				at[r.EventID] = r.At
			}
			return at, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d events consumed after %s", len(rows), len(ids), limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *subject) measureIdle(ctx context.Context, c config, admin *bun.DB) (idleCost, error) {
	pid := s.proc.Cmd.Process.Pid
	u, err := url.Parse(c.redisURL)
	if err != nil {
		return idleCost{}, err
	}
	xacts := func() (int64, error) {
		var n int64
		err := admin.NewRaw("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = ?", s.db.Name).Scan(ctx, &n)
		return n, err
	}
	x0, err := xacts()
	if err != nil {
		return idleCost{}, err
	}
	cpu0 := procstat.CPU(pid)
	t0 := time.Now()
	cmds, err := monitor(u.Host, c.idle, func() map[string]bool { return redisPorts(pid) })
	if err != nil {
		return idleCost{}, err
	}
	secs := time.Since(t0).Seconds()
	cpu := procstat.CPU(pid) - cpu0
	// Backends report their counts when idle, at most every second or so.
	time.Sleep(1500 * time.Millisecond)
	x1, err := xacts()
	if err != nil {
		return idleCost{}, err
	}
	return idleCost{redis: cmds, xacts: x1 - x0, cpu: cpu, seconds: secs}, nil
}

// monitor runs Redis MONITOR on addr for d and counts, by command name,
// the commands sent from the local ports ports() returns (read again
// every second: a process may reconnect). Commands a script runs are not
// counted: they come from "lua", not a client.
func monitor(addr string, d time.Duration, ports func() map[string]bool) (map[string]int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(conn, 1<<20)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		return nil, fmt.Errorf("MONITOR: %q %w", line, err)
	}
	end := time.Now().Add(d)
	_ = conn.SetReadDeadline(end)
	mine, refreshed := ports(), time.Now()
	out := map[string]int{}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return out, nil
			}
			return nil, err
		}
		if time.Since(refreshed) > time.Second {
			for p := range ports() {
				mine[p] = true
			}
			refreshed = time.Now()
		}
		// +1733456789.123456 [0 127.0.0.1:53422] "evalsha" "..."
		_, rest, ok := strings.Cut(line, "[")
		if !ok {
			continue
		}
		client, cmd, _ := strings.Cut(rest, "] ")
		_, from, _ := strings.Cut(client, " ")
		_, port, _ := strings.Cut(from, ":")
		if !mine[port] {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(cmd, `"`), `"`)
		out[strings.ToLower(name)]++
	}
}

// redisPorts returns the local ports of pid's TCP connections to port
// 6379 (ss -tnp).
func redisPorts(pid int) map[string]bool {
	out, _ := exec.Command("ss", "-tnpH", "state", "established").Output()
	ports := map[string]bool{}
	tag := "pid=" + strconv.Itoa(pid) + ","
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.Contains(line, tag) || !strings.HasSuffix(f[3], ":6379") {
			continue
		}
		if i := strings.LastIndexByte(f[2], ':'); i >= 0 {
			ports[f[2][i+1:]] = true
		}
	}
	return ports
}

func event() (outbox.Event, error) {
	id := uuid.NewString()
	return outbox.NewAuditEvent(outbox.AuditPayload{Action: "bench.wake", Actor: "wakebench", ResourceType: "bench",
		ResourceID: id[:8], Outcome: "accepted", RequestID: "req-" + id[:8]}, id, time.Now())
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func pct(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)].Microseconds()) / 1000
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
