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

// Register adds the routes to g, the authenticated /api/v1 group.
func (a *API) Register(g *echo.Group) {
	// 415, then the agent's rate, before the body is read or anything reserved.
	g.POST(RouteTopups, a.create, httpx.RequireJSON(), a.rate, a.idem)
	g.GET(RouteTopup, a.get)
	g.GET(RouteWallet, a.wallet)
}

// AccessRoutes are the access-log policies of the routes. The order routes
// carry the private pay_url in their bodies, so they log under
// PolicyPayment; the wallet route uses the default policy.
func AccessRoutes() []accesslog.Route {
	pay := accesslog.RoutePolicy{Policy: redaction.PolicyPayment}
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
	body, err := httpx.ReadBody(c) // held once, shared with the idempotency middleware
	if err != nil {
		return err // *http.MaxBytesError renders as 413
	}
	req, err := parseCreate(body)
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
