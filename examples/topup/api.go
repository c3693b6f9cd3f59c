package topup

import (
	"errors"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
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
	// DB is the pool the handlers open their transactions on. Required.
	DB *bun.DB
	// PayLinks makes the orders' payment links. Required.
	PayLinks *PayLinks
	// Guard is the optional short guard of the create command (Redis);
	// Postgres decides without it.
	Guard ports.Guard
	// Clock stamps orders. Default: time.Now.
	Clock ports.Clock
	// Logger receives guard failures. Default: slog.Default().
	Logger *slog.Logger
	// Config reads KeyMaxAmountCents for each create (*configsvc.Service
	// of a registry holding ConfigSpecs). Nil: only MaxAmountCents applies.
	Config ConfigReader
}

// API serves the top-up routes.
type API struct {
	db     *bun.DB
	links  *PayLinks
	clock  ports.Clock
	idem   echo.MiddlewareFunc
	config ConfigReader
}

// NewAPI returns the handlers; it fails on a missing DB or PayLinks.
func NewAPI(cfg APIConfig) (*API, error) {
	if cfg.DB == nil || cfg.PayLinks == nil {
		return nil, errors.New("topup: APIConfig needs DB and PayLinks")
	}
	if cfg.Clock == nil {
		cfg.Clock = ports.ClockFunc(time.Now)
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
	return &API{db: cfg.DB, links: cfg.PayLinks, clock: cfg.Clock, idem: idem, config: cfg.Config}, nil
}

// Register adds the routes to g, the authenticated /api/v1 group.
func (a *API) Register(g *echo.Group) {
	g.POST(RouteTopups, a.create, httpx.RequireJSON(), a.idem) // 415 before any reservation
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

// agentID is the authenticated subject: the agent whose wallet is topped
// up and whose key space the idempotency keys live in.
func agentID(c echo.Context) (string, bool) {
	p, ok := auth.PrincipalFrom(c.Request().Context())
	return p.Subject, ok && p.Subject != ""
}
