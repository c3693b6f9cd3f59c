package main_test

// End-to-end harness: the relay binary runs as real child processes against
// a private database and queue per test; the consumer is an Asynq server in
// the test process whose side effect is a row in `consumed`.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/redisurl"
)

// Bounds for every wait; the CI box is a busy 2-core machine. A wait fails
// when its state has not moved for waitLong (progress, not a clock), and in
// any case after waitCap.
const (
	waitLong = 60 * time.Second
	waitCap  = 10 * time.Minute
	tick     = 50 * time.Millisecond
)

// relayBin and apiBin are the binaries built once by TestMain, with the
// test-only domain (-tags testdomain) beside the service's, as this
// test binary has it (testdomain_test.go).
var relayBin, apiBin string

// buildTags are the tags of every binary the tests build.
const buildTags = "testdomain"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "relay-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay e2e: temp dir:", err)
		os.Exit(1)
	}
	relayBin, apiBin = filepath.Join(dir, "relay"), filepath.Join(dir, "api")
	for bin, pkg := range map[string]string{relayBin: ".", apiBin: "../api"} {
		build := exec.Command("go", "build", "-tags", buildTags, "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "relay e2e: go build -tags", buildTags, pkg+":", err)
			_ = os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// orderCreated is the payload of the "order.created" test event.
type orderCreated struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

const orderCreatedType = "order.created"

// world is one test's private database, queue and consumer.
type world struct {
	t        *testing.T
	db       *testinfra.DB
	store    *pgoutbox.Store
	redisURL string
	queue    string
	cons     *consumer
}

// newWorld creates a database migrated with every domain's set (the
// binaries' domains: the service's and the test domain), the harness's
// business tables and a unique queue on redisURL ("" means the shared harness Redis). The queue's
// keys are removed when the test ends.
func newWorld(t *testing.T, redisURL string) *world {
	t.Helper()
	r := testinfra.NewRedis(t)
	if redisURL == "" {
		redisURL = r.URL
	}
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(domainMigrations()...)})
	return worldOn(t, db, redisURL, r.QueueName("e2e"))
}

// privateWorld is newWorld on a private server's postgres database (a
// pgtopo pair or server the test stops, fails over or restarts), migrated
// here, with a queue named name on the shared harness Redis.
func privateWorld(t *testing.T, url, name string) *world {
	t.Helper()
	bdb, err := testinfra.OpenBun(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = bdb.Close() })
	require.NoError(t, postgres.MigrateWith(domainMigrations()...)(t.Context(), bdb))
	r := testinfra.NewRedis(t)
	return worldOn(t, &testinfra.DB{Name: "postgres", URL: url, Bun: bdb}, r.URL, r.QueueName(name))
}

// domainMigrations are the migration directories of every domain the
// binaries run.
func domainMigrations() []fs.FS {
	var out []fs.FS
	for _, set := range domains.MigrationSets() {
		out = append(out, set.FS)
	}
	return out
}

// worldOn adds the business tables to db and returns the world on it and
// queue q of redisURL; the queue's keys are removed when the test ends.
func worldOn(t *testing.T, db *testinfra.DB, redisURL, q string) *world {
	t.Helper()
	for _, ddl := range []string{
		`CREATE TABLE orders (id text PRIMARY KEY, amount int NOT NULL)`,
		`CREATE TABLE consumed (event_id uuid PRIMARY KEY, order_id text NOT NULL, n int NOT NULL,
			request_id text NOT NULL, correlation_id text NOT NULL)`,
	} {
		_, err := db.Bun.ExecContext(t.Context(), ddl)
		require.NoError(t, err, "create business table: %s", ddl)
	}
	store, err := pgoutbox.NewStore(db.Bun, pgoutbox.Config{})
	require.NoError(t, err)
	w := &world{t: t, db: db, store: store, redisURL: redisURL, queue: q}
	t.Cleanup(func() { deleteQueue(t, redisURL, w.queue) })
	t.Cleanup(func() { // registered before the processes', so it prints last
		if t.Failed() {
			t.Logf("state when the test failed: %s", w.summary())
		}
	})
	return w
}

// summary says where the events of a failed test stand, in Postgres and
// in the queue, in a few lines: CI shows only the end of a test's output.
func (w *world) summary() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var byStatus []struct {
		Status int
		N      int
	}
	err := w.db.Bun.NewRaw("SELECT status, count(*) AS n FROM tb_outbox_event GROUP BY status ORDER BY status").Scan(ctx, &byStatus)
	var unconsumed []struct {
		EventID       string
		Status        int
		RetryCount    int
		LastErrorCode string
	}
	if err == nil {
		err = w.db.Bun.NewRaw(`SELECT event_id::text, status, retry_count, coalesce(last_error_code, '') AS last_error_code FROM tb_outbox_event e
			WHERE NOT EXISTS (SELECT 1 FROM tb_outbox_consumption c WHERE c.event_id = e.event_id) ORDER BY id LIMIT 5`).Scan(ctx, &unconsumed)
	}
	if err != nil {
		return fmt.Sprintf("read the outbox: %v", err)
	}
	out := fmt.Sprintf("outbox events by status %v; first unconsumed:", byStatus)
	topo, err := redisurl.Parse(w.redisURL)
	if err != nil {
		return out + " " + err.Error()
	}
	ins := asynq.NewInspector(queue.ConnOpt(topo))
	defer ins.Close()
	for _, e := range unconsumed {
		state := "no task"
		if ti, err := ins.GetTaskInfo(w.queue, e.EventID); err == nil {
			state = fmt.Sprintf("task %s, retried %d, last error %q", ti.State, ti.Retried, ti.LastErr)
		} else if !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
			state = err.Error()
		}
		out += fmt.Sprintf("\n  %s status %d retries %d error %q: %s", e.EventID, e.Status, e.RetryCount, e.LastErrorCode, state)
	}
	if qi, err := ins.GetQueueInfo(w.queue); err == nil {
		out += fmt.Sprintf("\n  queue: pending %d active %d scheduled %d retry %d archived %d completed %d",
			qi.Pending, qi.Active, qi.Scheduled, qi.Retry, qi.Archived, qi.Completed)
	}
	return out
}

// deleteQueue removes the test's queue, including the completed tasks
// asynq's DeleteQueue leaves behind. A private Redis that is gone is fine.
func deleteQueue(t *testing.T, redisURL, q string) {
	if !strings.HasPrefix(redisURL, "redis://") {
		return // a private Sentinel or Cluster topology, stopped with the test (a failover can leave orphaned active tasks)
	}
	topo, err := redisurl.Parse(redisURL)
	if err != nil {
		t.Errorf("parse redis url: %v", err)
		return
	}
	ins := asynq.NewInspector(queue.ConnOpt(topo))
	defer ins.Close()
	if err := ins.DeleteQueue(q, true); err != nil && !errors.Is(err, asynq.ErrQueueNotFound) && !isConnErr(err) {
		t.Errorf("delete asynq queue %s: %v", q, err)
	}
	ro, err := rueidis.ParseURL(redisURL)
	if err != nil {
		return
	}
	ro.DisableCache = true
	c, err := rueidis.NewClient(ro)
	if err != nil {
		return // private Redis already stopped
	}
	defer c.Close()
	if err := testinfra.DeletePrefix(context.Background(), c, "asynq:{"+q+"}:"); err != nil && !isConnErr(err) {
		t.Errorf("delete asynq keys of %s: %v", q, err)
	}
}

func isConnErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || strings.Contains(err.Error(), "connection refused")
}

// placeOrders writes the orders and one order.created event each through
// db (the caller's transaction) and returns the event ids.
func (w *world) placeOrders(ctx context.Context, db bun.IDB, reqID, corrID string, orders ...orderCreated) ([]string, error) {
	ids := make([]string, len(orders))
	evs := make([]outbox.Event, len(orders))
	for i, o := range orders {
		if _, err := db.NewRaw("INSERT INTO orders (id, amount) VALUES (?, ?)", o.OrderID, o.Amount).Exec(ctx); err != nil {
			return nil, fmt.Errorf("insert order %s: %w", o.OrderID, err)
		}
		ev, err := outbox.New(outbox.NewParams{
			EventID: uuid.NewString(), EventType: orderCreatedType, PayloadVersion: 1,
			AggregateType: "order", AggregateID: o.OrderID, ResourceType: "order", ResourceID: o.OrderID,
			RequestID: reqID, CorrelationID: corrID, Payload: o, Now: time.Now(),
		})
		if err != nil {
			return nil, err
		}
		ids[i], evs[i] = ev.EventID, ev
	}
	if err := pgoutbox.Append(ctx, db, evs...); err != nil {
		return nil, err
	}
	return ids, nil
}

// commit places orders in one committed transaction.
func (w *world) commit(reqID, corrID string, orders ...orderCreated) []string {
	w.t.Helper()
	var ids []string
	err := w.db.Bun.RunInTx(w.t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		ids, err = w.placeOrders(ctx, tx, reqID, corrID, orders...)
		return err
	})
	require.NoError(w.t, err, "commit %d orders", len(orders))
	return ids
}

// commitMany commits n orders in transactions of perTx and returns all ids.
func (w *world) commitMany(prefix string, n, perTx int) []string {
	w.t.Helper()
	var all []string
	for start := 0; start < n; start += perTx {
		var batch []orderCreated
		for i := start; i < min(start+perTx, n); i++ {
			batch = append(batch, orderCreated{OrderID: fmt.Sprintf("%s-%04d", prefix, i), Amount: i})
		}
		all = append(all, w.commit(fmt.Sprintf("req-%s-%d", prefix, start), fmt.Sprintf("corr-%s-%d", prefix, start), batch...)...)
	}
	return all
}

// count runs a count(*) query.
func (w *world) count(query string, args ...any) int {
	w.t.Helper()
	var n int
	require.NoError(w.t, w.db.Bun.NewRaw(query, args...).Scan(w.t.Context(), &n), "query %s", query)
	return n
}

// waitCount waits until query returns want.
func (w *world) waitCount(want int, query string, args ...any) {
	w.t.Helper()
	eventually(w.t, query, func() (bool, string) {
		got := w.count(query, args...)
		return got == want, fmt.Sprintf("got %d, want %d", got, want)
	})
}

// eventually polls cond in the test goroutine (so cond may use require)
// until it holds. It fails when cond's state string has not changed for
// waitLong (a count that stopped moving), or after waitCap in any case: a
// busy machine that is slow but moving does not fail it.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	start, last, since := time.Now(), "", time.Now()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if state != last {
			last, since = state, time.Now()
		}
		if time.Since(since) > waitLong {
			t.Fatalf("%s: no progress for %s; last state: %s", what, waitLong, state)
		}
		if time.Since(start) > waitCap {
			t.Fatalf("%s: not reached within %s; last state: %s", what, waitCap, state)
		}
		time.Sleep(tick)
	}
}

// consumer is the in-process Asynq worker. Its business effect is one
// `consumed` row per event (INSERT ... ON CONFLICT DO NOTHING); every raw
// delivery is counted as well, so duplicates stay observable.
type consumer struct {
	mu         sync.Mutex
	deliveries map[string]int // event_id -> handler calls
	audits     int
	logs       *testinfra.LogBuffer
}

// startConsumer runs a worker on w's queue until the test ends.
func (w *world) startConsumer() *consumer {
	w.t.Helper()
	c := &consumer{deliveries: map[string]int{}, logs: &testinfra.LogBuffer{}}
	log := slog.New(slog.NewJSONHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	topo, err := redisurl.Parse(w.redisURL) // as the relay reads REDIS_URL: one node, Sentinel or Cluster
	require.NoError(w.t, err)
	opt := queue.ConnOpt(topo)
	mux, err := queue.NewMux(log, []queue.Consumer{
		{EventType: orderCreatedType, Handler: queue.Handle(func(ctx context.Context, env outbox.Envelope, p orderCreated) error {
			c.mu.Lock()
			c.deliveries[env.EventID]++
			c.mu.Unlock()
			_, err := w.db.Bun.NewRaw(`INSERT INTO consumed (event_id, order_id, n, request_id, correlation_id)
				VALUES (?::uuid, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
				env.EventID, p.OrderID, p.Amount, env.RequestID, env.CorrelationID).Exec(ctx)
			return err
		})},
		{EventType: outbox.AuditEventType, Handler: queue.Handle(func(context.Context, outbox.Envelope, outbox.AuditPayload) error {
			c.mu.Lock()
			c.audits++
			c.mu.Unlock()
			return nil
		})},
	})
	require.NoError(w.t, err)
	srv := queue.NewServer(opt, queue.ServerConfig{
		Queues: map[string]int{w.queue: 1}, Concurrency: 8, Logger: log, ShutdownTimeout: 2 * time.Second,
		// A handler that failed while Postgres or Redis switched over is
		// retried within 2 s, not the production minute, so the waits
		// below see steady progress.
		RetryBase: 100 * time.Millisecond, RetryMax: 2 * time.Second,
	})
	require.NoError(w.t, srv.Start(mux))
	w.t.Cleanup(func() {
		srv.Shutdown()
		if w.t.Failed() {
			w.t.Logf("consumer logs:\n%s", c.logs.String())
		}
	})
	w.cons = c
	return c
}

// delivered returns the raw delivery count of each event id and the total.
func (c *consumer) delivered() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.deliveries))
	total := 0
	for k, v := range c.deliveries {
		out[k] = v
		total += v
	}
	return out, total
}

// relayProc is one relay child process.
type relayProc struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	admin string // host:port of the admin server
	logs  *testinfra.LogBuffer
	done  chan struct{}
	err   error // Wait's result, set before done closes
}

// startRelay runs `relay` (serve) for w with env overrides ("KEY=VALUE")
// and waits for /healthz. It is killed when the test ends.
func (w *world) startRelay(name string, env ...string) *relayProc {
	w.t.Helper()
	// freeAddr's port was free a moment ago; another process of a busy,
	// parallel run may take it first. Such a start is tried again on a
	// new port, a few times.
	for attempt := 1; ; attempt++ {
		p := w.spawnRelay(name, w.redisURL, env...)
		if p.waitUp() || attempt == 3 {
			p.waitHealthy()
			return p
		}
		w.t.Logf("relay %s: admin port %s was taken meanwhile; starting it again on another", name, p.admin)
	}
}

// waitUp waits for /healthz and reports false only when the process
// exited because its admin address was taken.
func (p *relayProc) waitUp() bool {
	p.t.Helper()
	up := true
	eventually(p.t, "relay "+p.name+" /healthz answers 200", func() (bool, string) {
		if p.exited() {
			if strings.Contains(p.logs.String(), "address already in use") {
				up = false
				return true, ""
			}
			require.False(p.t, true, "relay %s exited early: %v\n%s", p.name, p.err, p.logs.String())
		}
		code, _ := p.get("/healthz")
		return code == http.StatusOK, fmt.Sprintf("status %d", code)
	})
	return up
}

// spawnRelay starts the process without waiting for it.
func (w *world) spawnRelay(name, redisURL string, env ...string) *relayProc {
	w.t.Helper()
	return w.spawnBin(relayBin, name, redisURL, env...)
}

// spawnBin is spawnRelay for another build of the relay.
func (w *world) spawnBin(bin, name, redisURL string, env ...string) *relayProc {
	w.t.Helper()
	p := &relayProc{t: w.t, name: name, admin: freeAddr(w.t), logs: &testinfra.LogBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + w.db.URL,
		"REDIS_URL=" + redisURL,
		"ASYNQ_QUEUE=" + w.queue,
		"ADMIN_ADDR=" + p.admin,
		"RELAY_OWNER=" + name,
		"WORKER_ENABLED=false",
		"RELAY_POLL_INTERVAL=100ms",
		// The domains' periodic commands (a service's, due at some hour)
		// would add an event to a test that runs across their time; the
		// periodic-command test turns them on.
		"PERIODIC_ENABLED=false",
	}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(w.t, p.cmd.Start(), "start relay %s", name)
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	w.t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if w.t.Failed() {
			w.t.Logf("relay %s logs:\n%s", name, p.logs.String())
		}
	})
	return p
}

func (p *relayProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *relayProc) waitHealthy() {
	p.t.Helper()
	eventually(p.t, "relay "+p.name+" /healthz answers 200", func() (bool, string) {
		require.False(p.t, p.exited(), "relay %s exited early: %v\n%s", p.name, p.err, p.logs.String())
		code, _ := p.get("/healthz")
		return code == http.StatusOK, fmt.Sprintf("status %d", code)
	})
}

// get fetches an admin path; code is 0 when the server does not answer.
func (p *relayProc) get(path string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.admin + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of an unlabelled sample from /metrics.
func (p *relayProc) metric(name string) float64 {
	p.t.Helper()
	code, body := p.get("/metrics")
	require.Equal(p.t, http.StatusOK, code, "relay %s /metrics", p.name)
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(p.t, err, "parse %s sample %q", name, v)
			return f
		}
	}
	p.t.Fatalf("relay %s /metrics has no sample %s:\n%s", p.name, name, body)
	return 0
}

// kill sends SIGKILL and waits: the process gets no chance to clean up.
func (p *relayProc) kill() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Kill())
	<-p.done
	var ee *exec.ExitError
	require.ErrorAs(p.t, p.err, &ee, "relay %s was killed", p.name)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(p.t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "relay %s ended by SIGKILL, got %v", p.name, p.err)
}

// terminate sends SIGTERM and returns Wait's error, failing after limit.
func (p *relayProc) terminate(limit time.Duration) error {
	p.t.Helper()
	start := time.Now()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		p.t.Logf("relay %s stopped %s after SIGTERM", p.name, time.Since(start).Round(time.Millisecond))
		return p.err
	case <-time.After(limit):
		p.t.Fatalf("relay %s still running %s after SIGTERM", p.name, limit)
		return nil
	}
}

// errorLines returns the relay's log lines at level ERROR.
func (p *relayProc) errorLines() []string {
	var out []string
	for line := range strings.SplitSeq(p.logs.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return out
}

// runCLI runs `relay args...` against w's database and returns its output
// and exit code.
func (w *world) runCLI(args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	return w.runCLIEnv(nil, args...)
}

// runCLIEnv is runCLI with extra "KEY=VALUE" environment entries.
func (w *world) runCLIEnv(env []string, args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), waitLong)
	defer cancel()
	cmd := exec.CommandContext(ctx, relayBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + w.db.URL}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		w.t.Fatalf("run relay %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// startAPIBin runs the api binary on w's database and Redis, with env
// ("KEY=VALUE") over those, until the test ends, waits for /readyz, and
// returns its base URL. A start whose port another process took meanwhile
// is tried again on another.
func startAPIBin(t *testing.T, w *world, secret string, env ...string) string {
	t.Helper()
	url, _ := startAPIBinAdmin(t, w, secret, env...)
	return url
}

// startAPIBinAdmin is startAPIBin that also returns the base URL of the
// api's admin listener (ADMIN_ADDR: /metrics and the probes).
func startAPIBinAdmin(t *testing.T, w *world, secret string, env ...string) (url, adminURL string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		url, adminURL, taken := spawnAPIBin(t, w, secret, env...)
		if !taken {
			return url, adminURL
		}
		require.Less(t, attempt, 3, "the api binary found its HTTP_ADDR or ADMIN_ADDR taken three times")
	}
}

func spawnAPIBin(t *testing.T, w *world, secret string, env ...string) (url, adminURL string, taken bool) {
	t.Helper()
	addr, admin := freeAddr(t), freeAddr(t)
	logs := &testinfra.LogBuffer{}
	cmd := exec.Command(apiBin)
	// Every api gets its own admin port: the default (127.0.0.1:9091)
	// would be shared by parallel tests.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + w.db.URL, "REDIS_URL=" + w.redisURL,
		"HTTP_ADDR=" + addr, "ADMIN_ADDR=" + admin, "AUTH_JWT_SECRET=" + secret, "LOG_LEVEL=warn", "SHUTDOWN_DRAIN_DELAY=0s"}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start(), "start the api binary")
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("api logs:\n%s", logs.String())
		}
	})
	url, adminURL = "http://"+addr, "http://"+admin
	eventually(t, "the api binary answers /readyz", func() (bool, string) {
		select {
		case <-done:
			if strings.Contains(logs.String(), "address already in use") {
				taken = true
				return true, ""
			}
			t.Fatalf("the api binary exited: %s", logs.String())
		default:
		}
		res, err := apitest.Send(t.Context(), url, apitest.Request{Method: http.MethodGet, Path: "/readyz"})
		if err != nil {
			return false, err.Error()
		}
		return res.Status == http.StatusOK, fmt.Sprintf("status %d", res.Status)
	})
	return url, adminURL, taken
}

// freeAddr returns a 127.0.0.1 address that was free a moment ago (the
// relay needs a fixed ADMIN_ADDR, so ":0" cannot be used).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// blackHole accepts TCP connections and never answers: a Redis that hangs.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "redis://" + l.Addr().String() + "/0"
}

// lossEnv tunes the relays for a test's time scale (the defaults are 30 s
// periods); the mechanism is the same.
var lossEnv = []string{"RELAY_RECONCILE_INTERVAL=2s", "RELAY_RECONCILE_GRACE=1s", "RELAY_LOSS_CHECK_INTERVAL=200ms",
	"RELAY_LEASE_TTL=2s", "WORKER_RETRY_BASE=100ms", "WORKER_RETRY_MAX=1s", "WORKER_CONCURRENCY=8"}

// stallLimit fails a wait only when nothing moved for this long. It is
// longer than asynq's own bound for a task a Redis failover orphans in
// its active list (the dequeue replicated, its answer lost with the old
// master): the recoverer takes it back once its 30 s lease has been
// expired 30 s, on a one-minute tick, so up to 2 minutes.
const stallLimit = 150 * time.Second

// waitProgress polls probe until it reports done, failing only when its
// progress figure has not changed for stall: a busy machine is slow, not
// stuck. It returns false instead of failing when give is set.
func waitProgress(t *testing.T, what string, stall time.Duration, give bool, probe func() (progress int, done bool, state string)) bool {
	t.Helper()
	last, since := -1, time.Now()
	for {
		p, done, state := probe()
		if done {
			return true
		}
		if p != last {
			last, since = p, time.Now()
		}
		if time.Since(since) > stall {
			if give {
				return false
			}
			t.Fatalf("%s: no progress for %s; last state: %s", what, stall, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricSum adds every sample of a metric family (all label sets) from
// the relays' /metrics, and of the ones whose labels contain match.
func metricSum(t *testing.T, relays []*relayProc, name, match string) float64 {
	t.Helper()
	sum := 0.0
	for _, p := range relays {
		if p.exited() {
			continue
		}
		code, body := p.get("/metrics")
		require.Equal(t, http.StatusOK, code, "relay %s /metrics", p.name)
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, match) {
				continue
			}
			f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			require.NoError(t, err, "sample %q", line)
			sum += f
		}
	}
	return sum
}

// waitCountProgress waits until query returns want, failing only when the
// count has not moved for stallLimit (waitCount's fixed 30 s can be missed
// by a busy machine draining hundreds of events).
func (w *world) waitCountProgress(want int, query string, args ...any) {
	w.t.Helper()
	waitProgress(w.t, query, stallLimit, false, func() (int, bool, string) {
		got := w.count(query, args...)
		return got, got == want, fmt.Sprintf("got %d, want %d", got, want)
	})
}

var (
	migrateBinOnce sync.Once
	migrateBinErr  error
)

// migrateBin builds, once, the migrate binary next to relayBin (removed
// with it) and returns its path.
func migrateBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(relayBin), "migrate")
	migrateBinOnce.Do(func() {
		if out, err := exec.Command("go", "build", "-tags", buildTags, "-o", bin, "../migrate").CombinedOutput(); err != nil {
			migrateBinErr = fmt.Errorf("go build -tags %s ../migrate: %w\n%s", buildTags, err, out)
		}
	})
	require.NoError(t, migrateBinErr)
	return bin
}
