package topup_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/relay"
	"github.com/july/template/examples/topup"
)

// Bounds for every wait. Each is generous, not tight: what they wait for
// takes well under a second alone, and the CI box is a busy 2-core machine
// running other suites beside this one.
const (
	waitLong = 2 * time.Minute
	tick     = 50 * time.Millisecond
)

var testSecret = []byte("topup-test-secret-0123456789abcdef-0123456789")

// env is one test's private database, Redis prefix and API server, built
// like apps/api builds its server.
type env struct {
	db    *bun.DB
	redis *testinfra.Redis
	srv   *httptest.Server
	logs  *testinfra.LogBuffer // the server's log, JSON lines
	cred  *topup.Crediter
	trace *tracing.Provider // nil: untraced
}

type envOpts struct {
	guard  ports.Guard        // nil: a guard on the test's Redis prefix
	trace  *tracing.Provider  // nil: untraced; else wired like the apps wire it
	config topup.ConfigReader // nil: no configured limit
	// counter counts creates for topup.create.per_minute; nil: a counter
	// on the test's Redis prefix.
	counter ports.WindowCounter
	clock   ports.Clock // nil: the wall clock
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(topup.MigrationsFS)})
	db := tdb.Bun.WithQueryHook(postgres.TraceHook(tdb.Name)) // postgres.Open installs it in the apps
	r := testinfra.NewRedis(t)
	if o.guard == nil {
		g, err := redis.NewGuard(redis.Traced(r.Client), redis.GuardConfig{Prefix: r.Prefix})
		require.NoError(t, err)
		o.guard = g
	}
	if o.counter == nil {
		c, err := redis.NewWindowCounter(r.Client, r.Prefix)
		require.NoError(t, err)
		o.counter = c
	}
	logs := &testinfra.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{ReplaceAttr: redaction.ReplaceAttr}))

	links, err := topup.NewPayLinks(topup.DefaultPayBaseURL, []byte("pay-link-test-key-0123456789abcdef"))
	require.NoError(t, err)
	svc, err := topup.NewService(topup.ServiceConfig{DB: db, PayLinks: links, Config: o.config, Clock: o.clock})
	require.NoError(t, err)
	api, err := topup.NewAPI(topup.APIConfig{Service: svc, Guard: o.guard, Logger: log, Counter: o.counter})
	require.NoError(t, err)

	params := apiserver.Params{
		Logger: log, JWTSecret: testSecret, AccessLogHashKey: []byte("access-log-hash-key-0123456789abcdef"),
		Routes: topup.AccessRoutes(), Mappers: []httpx.ErrorMapper{topup.MapError},
	}
	if o.trace != nil {
		params.TracerProvider = o.trace
	}
	s, err := apiserver.New(params)
	require.NoError(t, err)
	api.Register(s.API)
	srv := httptest.NewServer(s.Echo)
	t.Cleanup(srv.Close)

	cred, err := topup.NewCrediter(db, nil, log)
	require.NoError(t, err)
	return &env{db: db, redis: r, srv: srv, logs: logs, cred: cred, trace: o.trace}
}

// req is one request as an agent; do turns it into an apitest.Request.
type req struct {
	method, path, body string
	agent              string   // the token's subject; "" sends no token
	roles              []string // the token's roles; nil: topup.RoleAgent, empty: none
	key                string   // X-Request-ID; "" sends none
}

func (e *env) do(t testing.TB, r req) apitest.Response {
	t.Helper()
	ar := apitest.Request{Method: r.method, Path: r.path, Body: r.body}
	if r.agent != "" {
		if r.roles == nil {
			r.roles = []string{topup.RoleAgent}
		}
		ar.Token = apitest.Token(t, testSecret, r.agent, r.roles...)
	}
	if r.key != "" {
		ar.Header = map[string]string{"X-Request-ID": r.key}
	}
	return apitest.Do(t, e.srv.URL, ar)
}

func (e *env) create(t testing.TB, agent, key, body string) apitest.Response {
	t.Helper()
	return e.do(t, req{method: http.MethodPost, path: "/api/v1/topups", body: body, agent: agent, key: key})
}

func decodeOrder(t *testing.T, r apitest.Response) topup.OrderView {
	t.Helper()
	var v topup.OrderView
	require.NoError(t, json.Unmarshal([]byte(r.Body), &v), "body %s", r.Body)
	return v
}

func decodeWallet(t *testing.T, r apitest.Response) topup.WalletView {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, "wallet: %s", r.Body)
	var w topup.WalletView
	require.NoError(t, json.Unmarshal([]byte(r.Body), &w), "body %s", r.Body)
	return w
}

// count returns the rows of table matching where (SQL with args).
func (e *env) count(t *testing.T, table, where string, args ...any) int {
	t.Helper()
	q := e.db.NewSelect().TableExpr(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	n, err := q.Count(t.Context())
	require.NoError(t, err, "count %s where %s", table, where)
	return int(n)
}

// walletRow is the agent's wallet as stored (zero when absent).
func (e *env) walletRow(t *testing.T, agent string) topup.Wallet {
	t.Helper()
	var w topup.Wallet
	err := e.db.NewSelect().Model(&w).Where("agent_id = ?", agent).Scan(t.Context())
	if err != nil {
		require.ErrorContains(t, err, "no rows", "wallet of %s", agent)
	}
	return w
}

func (e *env) orderStatus(t *testing.T, id string) topup.Status {
	t.Helper()
	var s topup.Status
	require.NoError(t, e.db.NewSelect().TableExpr("ex_topup_order").Column("status").Where("id = ?", id).Scan(t.Context(), &s))
	return s
}

// envelopeOf returns the outbox envelope of the order's topup.created event.
func (e *env) envelopeOf(t *testing.T, topupID string) outbox.Envelope {
	t.Helper()
	var eventID string
	require.NoError(t, e.db.NewSelect().TableExpr("tb_outbox_event").ColumnExpr("event_id::text").
		Where("aggregate_id = ? AND event_type = ?", topupID, topup.EventCreated).Scan(t.Context(), &eventID))
	store, err := pgoutbox.NewStore(e.db, pgoutbox.Config{})
	require.NoError(t, err)
	ev, err := store.Get(t.Context(), eventID)
	require.NoError(t, err)
	return ev.Envelope()
}

// worker is the relay and an in-process asynq worker on a private queue.
type worker struct {
	queue  string
	opt    asynq.RedisConnOpt
	client *asynq.Client
	insp   *asynq.Inspector
}

// startRelay runs the outbox relay and a worker with the topup consumer
// until the test ends; the queue's keys are deleted afterwards.
func (e *env) startRelay(t testing.TB) *worker {
	t.Helper()
	opt, err := asynq.ParseRedisURI(e.redis.URL)
	require.NoError(t, err)
	w := &worker{queue: e.redis.AsynqQueue(t, "topup"), opt: opt, client: asynq.NewClient(opt), insp: asynq.NewInspector(opt)}
	t.Cleanup(func() {
		_ = w.insp.Close()
		_ = w.client.Close()
	})
	wake := queue.NewWake() // as queue.Module shares one between publisher and worker
	enq, err := queue.NewPublisher(w.client, queue.Config{Queue: w.queue, Wake: wake})
	require.NoError(t, err)
	pgStore, err := pgoutbox.NewStore(e.db, pgoutbox.Config{})
	require.NoError(t, err)
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	var store ports.OutboxRelayStore = pgStore
	var pub ports.Publisher = enq
	opts := relay.Options{Logger: log}
	if e.trace != nil { // as apps/relay wires it
		store, pub, opts.Tracer = tracing.Store(store, e.trace), tracing.Publisher(pub, e.trace), tracing.NewRelay(e.trace)
	}
	rl, err := relay.New(store, pub, ports.ClockFunc(time.Now), relay.Config{Owner: "topup-test", PollInterval: 50 * time.Millisecond}, opts)
	require.NoError(t, err)

	mux, err := queue.NewMux(log, []queue.Consumer{e.cred.Consumer()})
	require.NoError(t, err)
	if e.trace != nil {
		mux.Use(queue.TraceMiddleware(e.trace))
	}
	srv := queue.NewServer(opt, queue.ServerConfig{Queues: map[string]int{w.queue: 1}, Concurrency: 4, Logger: log, ShutdownTimeout: 2 * time.Second, Wake: wake})
	require.NoError(t, srv.Start(mux))
	require.NoError(t, rl.Start(t.Context()))
	t.Cleanup(func() {
		require.NoError(t, rl.Stop(context.Background()))
		srv.Shutdown()
	})
	return w
}

// requireCompleted waits until the task reached asynq's completed state.
func (w *worker) requireCompleted(t *testing.T, id string) {
	t.Helper()
	var info *asynq.TaskInfo
	require.Eventually(t, func() bool {
		var err error
		info, err = w.insp.GetTaskInfo(w.queue, id)
		return err == nil && info.State == asynq.TaskStateCompleted
	}, waitLong, tick, "task %s never completed (last %+v)", id, info)
}

// downGuard is a guard whose Redis is unreachable (127.0.0.1:1).
func downGuard(t *testing.T) ports.Guard {
	t.Helper()
	c, _ := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{"127.0.0.1:1"}, ForceSingleClient: true, DisableCache: true,
		Dialer: net.Dialer{Timeout: 200 * time.Millisecond},
	})
	require.NotNil(t, c, "rueidis returns a client for an unreachable address with ForceSingleClient")
	t.Cleanup(c.Close)
	g, err := redis.NewGuard(c, redis.GuardConfig{Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	return g
}
