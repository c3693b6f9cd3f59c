package topup

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/http/ratehttp"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
)

// Routes, relative to the authenticated /api/v1 group.
const (
	RouteTopups = "/topups"
	RouteTopup  = "/topups/:id"
	RouteWallet = "/wallets/me"
)

// apiPrefix is where apps/api mounts the authenticated group.
const apiPrefix = "/api/v1"

// APIConfig configures NewAPI.
type APIConfig struct {
	// Service runs the use cases. Required.
	Service *Service
	// Guard is the optional short guard of the create command (Redis);
	// Postgres decides without it.
	Guard ports.Guard
	// Logger receives guard failures. Default: slog.Default().
	Logger *slog.Logger
	// Counter counts each agent's creates for KeyCreatesPerMinute across
	// replicas (Redis); nil or down, each replica counts its own.
	Counter ports.WindowCounter
}

// API serves the top-up routes. Its handlers only map HTTP to a Service
// call and the result back to HTTP: no transaction, no query.
type API struct {
	svc        *Service
	idem, rate echo.MiddlewareFunc
}

// NewAPI returns the handlers; it fails without a Service.
func NewAPI(cfg APIConfig) (*API, error) {
	if cfg.Service == nil {
		return nil, errors.New("topup: APIConfig needs a Service")
	}
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	if err != nil {
		return nil, err
	}
	idem, err := idemhttp.Middleware(idemhttp.Config{
		Operation:     OperationCreate,
		Fingerprinter: fp,
		Guard:         cfg.Guard,
		PrincipalFunc: agentID, // the agent is the idempotency principal
		// The business fields of a create: amount and channel, typed.
		Command: func(body []byte) (any, error) { return parseCreate(body) },
		Logger:  cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	rate, err := ratehttp.Middleware(ratehttp.Config{
		Name: OperationCreate, LimitFunc: cfg.Service.createsPerMinute, Counter: cfg.Counter, Clock: cfg.Service.clock,
		Refusal: func(limit int64) *httpx.Error {
			return httpx.TooManyRequests(CodeRateLimited,
				fmt.Sprintf("创建充值过于频繁：每分钟最多 %d 次，请在 Retry-After 指定的秒数后重试", limit))
		},
	})
	if err != nil {
		return nil, err
	}
	return &API{svc: cfg.Service, idem: idem, rate: rate}, nil
}

// Register adds the routes to g, the authenticated /api/v1 group. Each
// route checks the caller's roles first (the use case's own rule, so the
// same 403), before anything reads or parses the body.
func (a *API) Register(g *echo.Group) {
	g.POST(RouteTopups, a.create, allow(RoleAgent), httpx.RequireJSON(), a.rate, a.idem) // 403, 415, then the agent's rate, before the body is read or anything reserved
	g.GET(RouteTopup, a.get, allow(RoleAgent, RoleAdmin))
	g.GET(RouteWallet, a.wallet, allow(RoleAgent))
}

// allow answers ErrForbidden (403) unless the caller holds one of roles;
// the use case checks again, so this only moves the refusal ahead of the
// body.
func allow(roles ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			who, err := actor(c)
			if err != nil {
				return err
			}
			if err := who.require(roles...); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// AccessRoutes are the access-log policies of the routes. The order routes
// carry the private pay_url in their bodies, so they log under
// PolicyPayment, which is default-deny: only the fields declared here
// (the order id, channel, amount and state an operator needs) keep their
// values, the agent id is correlated by a keyed hash, and any other field,
// including one added later, is logged as its shape. The wallet route uses
// the default policy.
func AccessRoutes() []accesslog.Route {
	pay := accesslog.RoutePolicy{
		Policy:    redaction.PolicyPayment,
		Safe:      []string{"topup_id", "order_id", "channel", "amount_cents", "status", "created_at", "updated_at"},
		Correlate: []string{"agent_id"},
	}
	return []accesslog.Route{
		{Path: apiPrefix + RouteTopups, RoutePolicy: pay},
		{Path: apiPrefix + RouteTopup, RoutePolicy: pay},
	}
}

// create is POST /api/v1/topups. The idempotency middleware has validated
// the key and fingerprinted the body; Service.Create does the rest.
func (a *API) create(c echo.Context) error {
	ctx := c.Request().Context()
	key, ok := idemhttp.KeyFrom(ctx)
	if !ok {
		return httpx.Internal(fmt.Errorf("topup: create route without idempotency middleware"))
	}
	req, err := createRequest(c)
	if err != nil {
		return err
	}
	who, err := actor(c)
	if err != nil {
		return err
	}
	res, err := a.svc.Create(ctx, who, CreateCommand{Key: key, Request: req, RequestID: httpx.RequestID(ctx)})
	switch {
	case err != nil:
		return err
	case res.Replay != nil:
		return idemhttp.Replay(c, *res.Replay)
	}
	return c.JSONBlob(http.StatusCreated, res.Body)
}

// createRequest is the body as the idempotency middleware decoded it
// (parseCreate runs once per request), or decoded here without it.
func createRequest(c echo.Context) (CreateRequest, error) {
	if cmd, ok, err := idemhttp.Decoded(c); ok {
		if err != nil {
			return CreateRequest{}, err
		}
		return cmd.(CreateRequest), nil
	}
	body, err := httpx.ReadBody(c) // held once, shared with the idempotency middleware
	if err != nil {
		return CreateRequest{}, err // *http.MaxBytesError renders as 413
	}
	return parseCreate(body)
}

// get is GET /api/v1/topups/:id.
func (a *API) get(c echo.Context) error {
	who, err := actor(c)
	if err != nil {
		return err
	}
	id, err := httpx.PathUUID(c, "id")
	if err != nil {
		return err
	}
	v, err := a.svc.Order(c.Request().Context(), who, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// wallet is GET /api/v1/wallets/me.
func (a *API) wallet(c echo.Context) error {
	who, err := actor(c)
	if err != nil {
		return err
	}
	v, err := a.svc.Wallet(c.Request().Context(), who)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// actor is the authenticated caller as the use cases take it. The group's
// auth middleware runs first, so the 401 is a safety net.
func actor(c echo.Context) (Actor, error) {
	p, ok := auth.PrincipalFrom(c.Request().Context())
	if !ok || p.Subject == "" {
		return Actor{}, echo.ErrUnauthorized
	}
	return Actor{Subject: p.Subject, Roles: p.Roles}, nil
}

// agentID is the authenticated subject: the agent whose wallet is topped
// up and whose key space the idempotency keys live in.
func agentID(c echo.Context) (string, bool) {
	p, ok := auth.PrincipalFrom(c.Request().Context())
	return p.Subject, ok && p.Subject != ""
}
