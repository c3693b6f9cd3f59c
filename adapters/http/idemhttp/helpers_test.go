package idemhttp_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
)

// order is the example business row.
type order struct {
	bun.BaseModel `bun:"table:orders"`
	ID            int64 `bun:",pk,autoincrement"`
	AmountCents   int64
	pgidem.Record
}

type orderRequest struct {
	AmountCents int64 `json:"amount_cents" form:"amount_cents"`
}

// secret signs the tests' bearer tokens.
var secret = []byte("idemhttp-test-secret-0123456789abcdef")

// ordersPath is the create route under test.
const ordersPath = apiserver.Prefix + "/orders"

// app is one test's server: the create route on apiserver's /api/v1,
// real Postgres, an optional guard, and counters.
type app struct {
	db       *bun.DB
	srv      *httptest.Server
	handled  atomic.Int64  // handler entries
	gate     chan struct{} // when set, the first handler entry waits on it
	entered  chan struct{} // closed when the gated handler entered
	gateOnce atomic.Bool
	// gateAfterInsert moves the gate after pgidem.Insert: the first
	// request's row exists, uncommitted, while it waits.
	gateAfterInsert bool
}

type appOpts struct {
	guard    ports.Guard
	guardTTL time.Duration
	capture  bool // the apiserver stack; false: a bare server without CaptureKey
	gated    bool
	// gateAfterInsert gates the first request after its row is inserted
	// (uncommitted) rather than at the handler's entry.
	gateAfterInsert bool
	// db, when set, is another app's database (the same orders table):
	// a new release of the route on the data of the old one.
	db *bun.DB
	// fingerprinter replaces the route's v3 Fingerprinter; command sets
	// Config.Command.
	fingerprinter *idempotency.Fingerprinter
	command       func(body []byte) (any, error)
	// keyOnly sets apiserver.Params.IdempotencyKeyOnly; proxy puts a
	// reverse proxy in front that generates X-Request-ID when a request
	// has none, as ingress-nginx (generate-request-id) and Envoy do.
	keyOnly, proxy bool
	// route replaces "/orders" under /api/v1, e.g. a route with a path
	// parameter; post it with postTo.
	route string
}

func newApp(t *testing.T, o appOpts) *app {
	t.Helper()
	db := o.db
	if db == nil {
		db = testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
		_, err := db.ExecContext(t.Context(), `CREATE TABLE orders (
			id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			amount_cents bigint NOT NULL,
			`+pgidem.ColumnsSQL+`,
			CONSTRAINT uq_orders_idem UNIQUE (`+pgidem.UniqueColumns+`))`)
		require.NoError(t, err)
	}

	a := &app{db: db, gateAfterInsert: o.gateAfterInsert}
	if o.gated {
		a.gate, a.entered = make(chan struct{}), make(chan struct{})
	}
	// The route's one top-level transport field; v3 skips nothing else.
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Volatile: []string{"timestamp"}})
	require.NoError(t, err)
	if o.fingerprinter != nil {
		fp = o.fingerprinter
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	idem, err := idemhttp.Middleware(idemhttp.Config{Operation: "order.create", Fingerprinter: fp, Command: o.command, Guard: o.guard, GuardTTL: o.guardTTL, Logger: log})
	require.NoError(t, err)

	var (
		e   *echo.Echo
		api *echo.Group
	)
	if o.capture {
		srv, err := apiserver.New(apiserver.Params{Logger: log, JWTSecret: secret, IdempotencyKeyOnly: o.keyOnly})
		require.NoError(t, err)
		e, api = srv.Echo, srv.API
	} else {
		// apiserver always installs CaptureKey: this is the one server
		// without it, to show the middleware fails closed.
		jwt, err := auth.NewJWT(secret, apiserver.JWTLeeway, nil)
		require.NoError(t, err)
		e = httpx.NewServer(httpx.ServerConfig{}, log, idemhttp.MapError)
		api = e.Group(apiserver.Prefix, auth.Middleware(jwt))
	}
	api.POST(cmp.Or(o.route, "/orders"), a.create, idem)
	var h http.Handler = e
	if o.proxy {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Request-ID") == "" {
				r.Header.Set("X-Request-ID", uuid.NewString())
			}
			e.ServeHTTP(w, r)
		})
	}
	a.srv = httptest.NewServer(h)
	t.Cleanup(a.srv.Close)
	return a
}

// create is the reference create handler.
func (a *app) create(c echo.Context) error {
	a.handled.Add(1)
	if !a.gateAfterInsert {
		a.wait()
	}
	key, ok := idemhttp.KeyFrom(c.Request().Context())
	if !ok {
		return echo.ErrInternalServerError
	}
	var req orderRequest
	if err := c.Bind(&req); err != nil {
		return err
	}
	var (
		replay *ports.StoredResponse
		body   []byte
	)
	err := a.db.RunInTx(c.Request().Context(), nil, func(ctx context.Context, tx bun.Tx) error {
		o := &order{AmountCents: req.AmountCents}
		d, stored, err := pgidem.Insert(ctx, tx, o, key)
		if err != nil {
			return err
		}
		if d == idempotency.DecisionReplay {
			replay = stored
			return nil
		}
		if a.gateAfterInsert {
			a.wait()
		}
		if body, err = json.Marshal(map[string]any{"id": o.ID, "amount_cents": o.AmountCents}); err != nil {
			return err
		}
		return pgidem.SaveResponse(ctx, tx, o, ports.StoredResponse{
			ResultRef: strconv.FormatInt(o.ID, 10), Status: http.StatusCreated, Body: body,
		})
	})
	switch {
	case err != nil:
		return err
	case replay != nil:
		return idemhttp.Replay(c, *replay)
	}
	return c.JSONBlob(http.StatusCreated, body)
}

// wait holds the first request that reaches it until the test closes the gate.
func (a *app) wait() {
	if a.gate != nil && a.gateOnce.CompareAndSwap(false, true) {
		close(a.entered)
		<-a.gate
	}
}

// lockWaiter returns a channel closed once a session of the test's
// database waits on a lock (a second INSERT blocked on the unique index
// behind the first request's open transaction). It polls until then or
// until the test ends.
func (a *app) lockWaiter(t *testing.T) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{})
	ctx := t.Context()
	go func() {
		for ctx.Err() == nil {
			var n int
			err := a.db.NewRaw(`SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(ctx, &n)
			if err == nil && n > 0 {
				close(ch)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return ch
}

// post sends a create request as user-1; headers are name, value pairs.
func (a *app) post(t *testing.T, body string, headers ...string) apitest.Response {
	t.Helper()
	return a.postAs(t, "user-1", body, headers...)
}

// postAs is post as subject sub.
func (a *app) postAs(t *testing.T, sub, body string, headers ...string) apitest.Response {
	t.Helper()
	return a.postTo(t, ordersPath, sub, body, headers...)
}

// postTo is postAs to path.
func (a *app) postTo(t *testing.T, path, sub, body string, headers ...string) apitest.Response {
	t.Helper()
	r := apitest.Request{Method: http.MethodPost, Path: path, Body: body, Token: apitest.Token(t, secret, sub), Header: map[string]string{}}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header[headers[i]] = headers[i+1]
	}
	return apitest.Do(t, a.srv.URL, r)
}

func (a *app) rows(t *testing.T) int64 {
	t.Helper()
	n, err := a.db.NewSelect().Table("orders").Count(t.Context())
	require.NoError(t, err)
	return n
}

// redisGuard returns a guard on the test's Redis prefix.
func redisGuard(t *testing.T) ports.Guard {
	t.Helper()
	g, _ := redisGuardOn(t)
	return g
}

// redisGuardOn is redisGuard with the test's Redis, for tests that also
// drive the server (CLIENT PAUSE) or read the guard's key.
func redisGuardOn(t *testing.T) (ports.Guard, *testinfra.Redis) {
	t.Helper()
	r := testinfra.NewRedis(t)
	g, err := redis.NewGuard(r.Client, redis.GuardConfig{Prefix: r.Prefix})
	require.NoError(t, err)
	return g, r
}

// downGuard returns a guard whose Redis is unreachable (127.0.0.1:1).
func downGuard(t *testing.T) ports.Guard {
	t.Helper()
	c, _ := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{"127.0.0.1:1"},
		ForceSingleClient: true,
		DisableCache:      true,
		Dialer:            net.Dialer{Timeout: 200 * time.Millisecond},
	})
	require.NotNil(t, c, "rueidis returns a client for an unreachable address with ForceSingleClient")
	t.Cleanup(c.Close)
	g, err := redis.NewGuard(c, redis.GuardConfig{Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	return g
}

// countingGuard counts calls to the guard it wraps.
type countingGuard struct {
	ports.Guard
	acquires atomic.Int64
}

func (g *countingGuard) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	g.acquires.Add(1)
	return g.Guard.Acquire(ctx, key, owner, ttl)
}
