package devices_test

import (
	"bytes"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/apps/domain"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
	"github.com/july/template/examples/devices"
)

var secret = []byte("devices-test-secret-0123456789abcdef")

// env is one test's API server over its own database and Redis prefix:
// apiserver.Module and the domain's API side, the way apps/api builds it.
type env struct {
	db    *bun.DB
	srv   *httptest.Server
	redis *testinfra.Redis
	logs  *testinfra.LogBuffer
	log   *slog.Logger
	clock *fakeClock
	// appClock is the app's clock: clock with envOpts.fakeClock, else the
	// wall clock.
	appClock ports.Clock
	// queue is the relay's private asynq queue (newEnv with relay set).
	queue string
	opts  envOpts
}

// newEnv starts the API. With relay set, the same app also runs the
// outbox relay and the asynq worker with the domain's consumer, on a
// queue of its own (apps/relay's shape).
func newEnv(t *testing.T, relay bool) *env {
	t.Helper()
	return newEnvOpts(t, envOpts{relay: relay})
}

// envOpts are newEnv's knobs.
type envOpts struct {
	// relay runs the relay side too (see newEnv).
	relay bool
	// fakeClock gives every part of the app (API, relay, worker, sweeps)
	// env.clock instead of the wall clock, so a test moves time by hand.
	fakeClock bool
	// afterChunk, with relay, is installed on the relay's worker before it
	// starts (devices.SetAfterChunk).
	afterChunk func(done int64) error
	// productionPool opens the app's pool with postgres.Open, as the api
	// does (pgx's simple protocol), instead of the harness's pool.
	productionPool bool
	// counter counts uploads for devices.upload.per_minute; nil: a
	// counter on the test's Redis prefix.
	counter ports.WindowCounter
}

func openDB(t *testing.T, production bool) *bun.DB {
	t.Helper()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(devices.MigrationsFS)})
	if !production {
		return tdb.Bun
	}
	db, err := postgres.Open(t.Context(), postgres.Config{URL: tdb.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func newEnvOpts(t *testing.T, o envOpts) *env {
	t.Helper()
	relay := o.relay
	v := &env{
		db:    openDB(t, o.productionPool),
		redis: testinfra.NewRedis(t),
		logs:  &testinfra.LogBuffer{},
		clock: &fakeClock{now: time.Now().UTC()},
		opts:  o,
	}
	v.log = slog.New(slog.NewJSONHandler(v.logs, nil))
	v.appClock = ports.ClockFunc(time.Now)
	if o.fakeClock {
		v.appClock = v.clock
	}
	var extra []fx.Option
	if relay {
		extra = append(extra, relayOptions(t, v))
	}
	guard, err := redis.NewGuard(v.redis.Client, redis.GuardConfig{Prefix: v.redis.Prefix})
	require.NoError(t, err)
	counter := o.counter
	if counter == nil {
		counter, err = redis.NewWindowCounter(v.redis.Client, v.redis.Prefix)
		require.NoError(t, err)
	}
	api, err := devices.Domain().API(domain.APIDeps{DB: v.db, Clock: v.appClock, Guard: guard, Counter: counter, Logger: v.log})
	require.NoError(t, err)

	var e *echo.Echo
	app := fxtest.New(t,
		fx.NopLogger,
		fx.Supply(v.db, v.log, apiserver.Params{Logger: v.log, JWTSecret: secret, Routes: api.AccessRoutes, Mappers: []httpx.ErrorMapper{api.ErrorMapper}}),
		fx.Provide(func() ports.Clock { return v.appClock }),
		apiserver.Module,
		fx.Invoke(func(s *apiserver.Server) { api.Register(s.API) }),
		fx.Options(extra...),
		fx.Populate(&e),
	)
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	v.srv = httptest.NewServer(e)
	t.Cleanup(v.srv.Close)
	return v
}

// worker returns a worker on the test's fake clock with small chunks.
func (v *env) worker(t *testing.T, owner string) *devices.Worker {
	t.Helper()
	w, err := devices.NewWorker(v.db, v.clock, devices.WorkerConfig{Owner: owner, ChunkSize: 2, LeaseFor: 30 * time.Second})
	require.NoError(t, err)
	return w
}

// taskOf decodes a task view.
func taskOf(t *testing.T, r apitest.Response) tasks.View {
	t.Helper()
	var v tasks.View
	r.Decode(t, &v)
	return v
}

// do sends a request as subject sub holding devices.RoleAdmin ("" sends
// no token), so the task mechanics tests may name any target agent;
// authz_test.go sends other roles with doAs. It checks the answer against
// docs/openapi.yaml; headers are name, value pairs.
func (v *env) do(t *testing.T, method, path, sub string, body []byte, headers ...string) apitest.Response {
	t.Helper()
	return v.doAs(t, method, path, adminCaller(sub), body, headers...)
}

// multipartCSV is an upload body with a fresh random boundary, as curl -F
// and browsers send: a retry of the same file is not byte-identical, and
// the idempotency fingerprint must still match it.
func multipartCSV(t *testing.T, field, csv string) ([]byte, string) {
	t.Helper()
	return multipartCSVWith(t, "", field, csv)
}

// multipartCSVWith is multipartCSV with the given boundary ("" picks a
// random one).
func multipartCSVWith(t *testing.T, boundary, field, csv string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if boundary != "" {
		require.NoError(t, mw.SetBoundary(boundary))
	}
	fw, err := mw.CreateFormFile(field, "devices.csv")
	require.NoError(t, err)
	_, err = fw.Write([]byte(csv))
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	return buf.Bytes(), mw.FormDataContentType()
}

// upload posts csv as subject sub with idempotency key key and returns the
// response and, for a 202, the task id.
func (v *env) upload(t *testing.T, sub, key, csv string) (apitest.Response, string) {
	t.Helper()
	return v.uploadWith(t, "", sub, key, csv)
}

// uploadWith is upload with the given multipart boundary ("" picks a
// random one).
func (v *env) uploadWith(t *testing.T, boundary, sub, key, csv string) (apitest.Response, string) {
	t.Helper()
	body, ct := multipartCSVWith(t, boundary, devices.FormField, csv)
	r := v.do(t, http.MethodPost, "/api/v1/device-assignments", sub, body, "Content-Type", ct, "X-Request-ID", key)
	if r.Status != http.StatusAccepted {
		return r, ""
	}
	var c devices.Created
	r.Decode(t, &c)
	require.NotEmpty(t, c.TaskID)
	return r, c.TaskID
}

func (v *env) getTask(t *testing.T, sub, id string) tasks.View {
	t.Helper()
	r := v.do(t, http.MethodGet, "/api/v1/device-assignments/"+id, sub, nil)
	require.Equal(t, http.StatusOK, r.Status, "get task %s: %s", id, r.Body)
	view := taskOf(t, r)
	requireValidDTO(t, view)
	return view
}

// requireValidDTO checks the contract every task DTO keeps.
func requireValidDTO(t *testing.T, v tasks.View) {
	t.Helper()
	require.True(t, v.Status.Valid(), "status %d outside 1..5", v.Status)
	require.Equal(t, v.Status.Name(), v.StatusName, "status_name of %d", v.Status)
	require.LessOrEqual(t, v.SuccessCount+v.FailedCount, v.TotalCount, "counts %+v", v)
	if v.Status == tasks.Completed {
		require.Equal(t, v.TotalCount, v.SuccessCount+v.FailedCount, "completed counts %+v", v)
		require.Equal(t, 100, v.Progress)
	}
	if v.ErrorSummary != nil {
		require.NoError(t, v.ErrorSummary.Validate(), "summary %+v must be safe", *v.ErrorSummary)
		for _, leak := range []string{"sql", "SELECT", "pq:", "panic", "127.0.0.1", "goroutine", "ex_devices"} {
			require.NotContains(t, v.ErrorSummary.Message, leak, "summary leaks internals")
		}
	}
}

type failurePage struct {
	Items    []devices.FailureItem `json:"items"`
	Page     int                   `json:"page"`
	PageSize int                   `json:"page_size"`
	Total    int64                 `json:"total"`
	// NotStored counts the failures beyond the stored cap.
	NotStored int64 `json:"not_stored_count"`
}

func (v *env) failures(t *testing.T, sub, id string, page, size int) failurePage {
	t.Helper()
	r := v.do(t, http.MethodGet, "/api/v1/device-assignments/"+id+"/failures?page="+strconv.Itoa(page)+"&page_size="+strconv.Itoa(size), sub, nil)
	require.Equal(t, http.StatusOK, r.Status, "failures of %s: %s", id, r.Body)
	var p failurePage
	r.Decode(t, &p)
	return p
}

// count returns a count(*) query's result.
func (v *env) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, v.db.NewRaw(query, args...).Scan(t.Context(), &n), "query %s", query)
	return n
}

// fakeClock is a ports.Clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// caller is who a request is sent as: a token's subject and roles.
type caller struct {
	sub   string
	roles []string
}

func agentCaller(sub string) caller { return caller{sub: sub, roles: []string{devices.RoleAgent}} }
func adminCaller(sub string) caller { return caller{sub: sub, roles: []string{devices.RoleAdmin}} }

// doAs is do as c.
func (v *env) doAs(t *testing.T, method, path string, c caller, body []byte, headers ...string) apitest.Response {
	t.Helper()
	r := apitest.Request{Method: method, Path: path, Body: string(body), Header: map[string]string{}}
	if c.sub != "" {
		r.Token = apitest.Token(t, secret, c.sub, c.roles...)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header[headers[i]] = headers[i+1]
	}
	res := apitest.Do(t, v.srv.URL, r)
	apitest.OpenAPI(t).Check(t, res)
	return res
}

// uploadAs is upload as c.
func (v *env) uploadAs(t *testing.T, c caller, key, csv string) (apitest.Response, string) {
	t.Helper()
	body, ct := multipartCSV(t, devices.FormField, csv)
	r := v.doAs(t, http.MethodPost, "/api/v1/device-assignments", c, body, "Content-Type", ct, "X-Request-ID", key)
	if r.Status != http.StatusAccepted {
		return r, ""
	}
	var created devices.Created
	r.Decode(t, &created)
	require.NotEmpty(t, created.TaskID)
	return r, created.TaskID
}

func (v *env) getTaskAs(t *testing.T, c caller, id string) tasks.View {
	t.Helper()
	r := v.doAs(t, http.MethodGet, "/api/v1/device-assignments/"+id, c, nil)
	require.Equal(t, http.StatusOK, r.Status, "get task %s: %s", id, r.Body)
	view := taskOf(t, r)
	requireValidDTO(t, view)
	return view
}

func (v *env) failuresAs(t *testing.T, c caller, id string, page, size int) failurePage {
	t.Helper()
	r := v.doAs(t, http.MethodGet, "/api/v1/device-assignments/"+id+"/failures?page="+strconv.Itoa(page)+"&page_size="+strconv.Itoa(size), c, nil)
	require.Equal(t, http.StatusOK, r.Status, "failures of %s: %s", id, r.Body)
	var p failurePage
	r.Decode(t, &p)
	return p
}

// waitGenerous bounds waits for the worker and the relay. Generous, not
// tight: each takes well under a second alone, and the CI box is a busy
// 2-core machine running other suites beside this one.
const waitGenerous = 2 * time.Minute
