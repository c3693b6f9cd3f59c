package idemhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/postgres"
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
	postgres.IdempotencyColumns
}

type orderRequest struct {
	AmountCents int64 `json:"amount_cents" form:"amount_cents"`
}

// app is one test's server: real Postgres, optional guard, and counters.
type app struct {
	db       *bun.DB
	srv      *httptest.Server
	handled  atomic.Int64  // handler entries
	gate     chan struct{} // when set, the first handler entry waits on it
	entered  chan struct{} // closed when the gated handler entered
	gateOnce atomic.Bool
}

type appOpts struct {
	guard   ports.Guard
	capture bool // install CaptureKey (true in every realistic server)
	gated   bool
}

func newApp(t *testing.T, o appOpts) *app {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	_, err := db.ExecContext(t.Context(), `CREATE TABLE orders (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		amount_cents bigint NOT NULL,
		`+postgres.IdempotencyColumnsSQL+`,
		CONSTRAINT uq_orders_idem UNIQUE (`+postgres.IdempotencyUniqueColumns+`))`)
	require.NoError(t, err)

	a := &app{db: db}
	if o.gated {
		a.gate, a.entered = make(chan struct{}), make(chan struct{})
	}
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	idem, err := idemhttp.Middleware(idemhttp.Config{Operation: "order.create", Fingerprinter: fp, Guard: o.guard, Logger: log})
	require.NoError(t, err)

	e := httpx.NewServer(httpx.ServerConfig{}, log, idemhttp.MapError)
	if o.capture {
		e.Pre(idemhttp.CaptureKey())
	}
	e.POST("/orders", a.create, testAuth, idem)
	a.srv = httptest.NewServer(e)
	t.Cleanup(a.srv.Close)
	return a
}

// testAuth trusts X-User as the principal: authentication is not under test.
func testAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := c.Request().Header.Get("X-User"); u != "" {
			r := c.Request()
			c.SetRequest(r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{Subject: u})))
		}
		return next(c)
	}
}

// create is the reference create handler.
func (a *app) create(c echo.Context) error {
	a.handled.Add(1)
	if a.gate != nil && a.gateOnce.CompareAndSwap(false, true) {
		close(a.entered)
		<-a.gate
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
		replay *postgres.StoredResult
		body   []byte
	)
	err := a.db.RunInTx(c.Request().Context(), nil, func(ctx context.Context, tx bun.Tx) error {
		o := &order{AmountCents: req.AmountCents}
		d, stored, err := postgres.InsertIdempotent(ctx, tx, o, key)
		if err != nil {
			return err
		}
		if d == idempotency.DecisionReplay {
			replay = stored
			return nil
		}
		if body, err = json.Marshal(map[string]any{"id": o.ID, "amount_cents": o.AmountCents}); err != nil {
			return err
		}
		return postgres.SaveIdempotentResponse(ctx, tx, o, postgres.StoredResult{
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

type response struct {
	status  int
	header  http.Header
	body    string
	code    string
	retry   bool
	details []map[string]string
}

// post sends a create request; headers are name, value pairs.
func (a *app) post(t *testing.T, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.WithoutCancel(t.Context()), http.MethodPost, a.srv.URL+"/orders", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User", "user-1")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := response{status: res.StatusCode, header: res.Header, body: string(b)}
	if res.StatusCode >= 400 {
		var env struct {
			Error struct {
				Code      string              `json:"code"`
				Retryable bool                `json:"retryable"`
				Details   []map[string]string `json:"details"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(b, &env), "error body %s", b)
		r.code, r.retry, r.details = env.Error.Code, env.Error.Retryable, env.Error.Details
	}
	return r
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
	r := testinfra.NewRedis(t)
	g, err := redis.NewGuard(r.Client, redis.GuardConfig{Prefix: r.Prefix})
	require.NoError(t, err)
	return g
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
