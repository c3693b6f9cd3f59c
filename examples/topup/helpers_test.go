package topup_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/labstack/echo/v4"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/relay"
	"github.com/july/template/examples/topup"
)

// Bounds for every wait; the CI box is a busy 2-core machine.
const (
	waitLong = 30 * time.Second
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
}

type envOpts struct {
	guard ports.Guard // nil: a guard on the test's Redis prefix
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(topup.MigrationsFS)}).Bun
	r := testinfra.NewRedis(t)
	if o.guard == nil {
		g, err := redis.NewGuard(r.Client, redis.GuardConfig{Prefix: r.Prefix})
		require.NoError(t, err)
		o.guard = g
	}
	logs := &testinfra.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{ReplaceAttr: redaction.ReplaceAttr}))

	links, err := topup.NewPayLinks(topup.DefaultPayBaseURL, []byte("pay-link-test-key-0123456789abcdef"))
	require.NoError(t, err)
	api, err := topup.NewAPI(topup.APIConfig{DB: db, PayLinks: links, Guard: o.guard, Logger: log})
	require.NoError(t, err)

	policies := map[string]accesslog.RoutePolicy{}
	for _, rt := range topup.AccessRoutes() {
		policies[rt.Path] = rt.RoutePolicy
	}
	access := accesslog.New(accesslog.Config{
		Logger: log, Redactor: &redaction.Redactor{HashKey: []byte("access-log-hash-key-0123456789abcdef")},
		Routes: policies, UserIDFunc: auth.UserID,
	})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{access}}, log, idemhttp.MapError, topup.MapError)
	e.Pre(idemhttp.CaptureKey())
	jwt, err := auth.NewJWT(testSecret, 30*time.Second, nil)
	require.NoError(t, err)
	api.Register(e.Group("/api/v1", auth.Middleware(jwt)))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	cred, err := topup.NewCrediter(db, nil, log)
	require.NoError(t, err)
	return &env{db: db, redis: r, srv: srv, logs: logs, cred: cred}
}

func token(t *testing.T, agent string) string {
	t.Helper()
	tok, err := auth.IssueToken(testSecret, agent, nil, time.Hour, time.Now())
	require.NoError(t, err)
	return tok
}

type req struct {
	method, path, body string
	agent              string // "" sends no token
	key                string // X-Request-ID; "" sends none
}

type response struct {
	status int
	header http.Header
	body   string
}

// errorBody is the error envelope.
type errorBody struct {
	Error struct {
		Code      string         `json:"code"`
		Message   string         `json:"message"`
		RequestID string         `json:"request_id"`
		Retryable bool           `json:"retryable"`
		Details   []httpx.Detail `json:"details"`
	} `json:"error"`
}

func (e *env) do(t *testing.T, r req) response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequestWithContext(context.WithoutCancel(t.Context()), r.method, e.srv.URL+r.path, body)
	require.NoError(t, err)
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.agent != "" {
		hr.Header.Set("Authorization", "Bearer "+token(t, r.agent))
	}
	if r.key != "" {
		hr.Header.Set("X-Request-ID", r.key)
	}
	res, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

func (e *env) create(t *testing.T, agent, key, body string) response {
	t.Helper()
	return e.do(t, req{method: http.MethodPost, path: "/api/v1/topups", body: body, agent: agent, key: key})
}

func decodeOrder(t *testing.T, r response) topup.OrderView {
	t.Helper()
	var v topup.OrderView
	require.NoError(t, json.Unmarshal([]byte(r.body), &v), "body %s", r.body)
	return v
}

func decodeError(t *testing.T, r response) errorBody {
	t.Helper()
	var e errorBody
	require.NoError(t, json.Unmarshal([]byte(r.body), &e), "body %s", r.body)
	return e
}

func decodeWallet(t *testing.T, r response) topup.WalletView {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "wallet: %s", r.body)
	var w topup.WalletView
	require.NoError(t, json.Unmarshal([]byte(r.body), &w), "body %s", r.body)
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
	store, err := postgres.NewOutboxStore(e.db, postgres.OutboxConfig{})
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
func (e *env) startRelay(t *testing.T) *worker {
	t.Helper()
	opt, err := asynq.ParseRedisURI(e.redis.URL)
	require.NoError(t, err)
	w := &worker{queue: e.redis.AsynqQueue(t, "topup"), opt: opt, client: asynq.NewClient(opt), insp: asynq.NewInspector(opt)}
	t.Cleanup(func() {
		_ = w.insp.Close()
		_ = w.client.Close()
	})
	enq, err := queue.NewEnqueuer(w.client, queue.Config{Queue: w.queue})
	require.NoError(t, err)
	store, err := postgres.NewOutboxStore(e.db, postgres.OutboxConfig{})
	require.NoError(t, err)
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	rl, err := relay.New(store, enq, ports.ClockFunc(time.Now), relay.Config{Owner: "topup-test", PollInterval: 50 * time.Millisecond}, relay.Options{Logger: log})
	require.NoError(t, err)

	mux, err := queue.NewMux(log, []queue.Consumer{e.cred.Consumer()})
	require.NoError(t, err)
	srv := queue.NewServer(opt, queue.ServerConfig{Queues: map[string]int{w.queue: 1}, Concurrency: 4, Logger: log, ShutdownTimeout: 2 * time.Second})
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
