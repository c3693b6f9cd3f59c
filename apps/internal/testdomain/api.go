package testdomain

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
)

// API serves the routes: each handler maps HTTP to one Service call.
type API struct {
	svc  *Service
	idem echo.MiddlewareFunc
}

// NewAPI returns the handlers over svc; guard (Redis) is optional.
func NewAPI(svc *Service, guard ports.Guard, log *slog.Logger) (*API, error) {
	if svc == nil {
		return nil, errors.New("testdomain: NewAPI needs a Service")
	}
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	if err != nil {
		return nil, err
	}
	idem, err := idemhttp.Middleware(idemhttp.Config{
		Operation: OperationCreate, Fingerprinter: fp, Guard: guard, Logger: log,
		Command: func(body []byte) (any, error) { return parseCreate(body) },
	})
	if err != nil {
		return nil, err
	}
	return &API{svc: svc, idem: idem}, nil
}

// Register adds the routes to g, the authenticated /api/v1 group. The
// role is checked before the idempotency middleware reads the body.
func (a *API) Register(g *echo.Group) {
	path := strings.TrimPrefix(RouteOrders, "/api/v1")
	writer := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := actor(c).mayCreate(); err != nil {
				return err
			}
			return next(c)
		}
	}
	g.POST(path, a.create, writer, httpx.RequireJSON(), a.idem)
	g.GET(path+"/:id", a.get)
}

func (a *API) create(c echo.Context) error {
	ctx := c.Request().Context()
	key, ok := idemhttp.KeyFrom(ctx)
	if !ok {
		return httpx.Internal(errors.New("testdomain: create route without idempotency middleware"))
	}
	cmd, _, err := idemhttp.Decoded(c) // parseCreate ran once, in the middleware
	if err != nil {
		return err
	}
	req, ok := cmd.(CreateRequest)
	if !ok {
		return httpx.Internal(errors.New("testdomain: create route without a decoded command"))
	}
	res, err := a.svc.Create(ctx, actor(c), CreateCommand{Key: key, Request: req, RequestID: httpx.RequestID(ctx)})
	switch {
	case err != nil:
		return err
	case res.Replay != nil:
		return idemhttp.Replay(c, *res.Replay)
	}
	return c.JSONBlob(http.StatusCreated, res.Body)
}

func (a *API) get(c echo.Context) error {
	id, err := httpx.PathUUID(c, "id")
	if err != nil {
		return err
	}
	v, err := a.svc.Order(c.Request().Context(), actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// actor is the authenticated caller (the group's auth middleware ran).
func actor(c echo.Context) Actor {
	p, _ := auth.PrincipalFrom(c.Request().Context())
	return Actor{Subject: p.Subject, Roles: p.Roles}
}
