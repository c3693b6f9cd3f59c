package confighttp

import (
	"log/slog"
	"net/http"
	"regexp"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/sysconfig"
)

// Route patterns, relative to the group Register is given (the app mounts
// them under /api/v1). Access-log policies and the OpenAPI document name
// the full patterns.
const (
	RouteList = "/system-configs"
	RouteKey  = "/system-configs/:key"
)

// ListResponse is the body of GET /system-configs.
type ListResponse struct {
	Items []sysconfig.View `json:"items"`
}

// handlers serves the routes over one Service.
type handlers struct {
	svc   *configsvc.Service
	log   *slog.Logger
	limit *RejectLimit
}

// Options are Register's optional settings.
type Options struct {
	// RejectLimit, when set, bounds rejected PUTs per principal (429).
	RejectLimit *RejectLimit
}

// Register adds the system-config routes to g:
//
//	GET /system-configs?module=   list (module optional)
//	GET /system-configs/:key      one key, with ETag "<version>"
//	PUT /system-configs/:key      {"value": <JSON of the key's type>, "version": <int, optional>}
//	                              or If-Match: "<version>" instead of version
//
// Every route requires a principal (auth.Middleware must run first on g,
// else 401) holding auth.RoleSuperAdmin (else 403). Every refused PUT by
// an authenticated caller is audited: 403 through Service.RecordForbidden,
// a malformed key or body, 415, 413 and a bad If-Match through
// Service.RecordRejected with the answered code, and the rest by
// Service.Update. A 401 is not audited: there is no authenticated subject
// to record as the actor (the access log records it). log receives the
// line of an audit that could not be written; nil means slog.Default().
// With Options.RejectLimit a principal's rejected PUTs are bounded per
// window (429 CONFIG_UPDATE_RATE_LIMITED, see RejectLimit).
func Register(g *echo.Group, svc *configsvc.Service, log *slog.Logger, opts ...Options) {
	if log == nil {
		log = slog.Default()
	}
	h := &handlers{svc: svc, log: log}
	for _, o := range opts {
		if o.RejectLimit != nil {
			h.limit = o.RejectLimit
		}
	}
	admin := h.requireAdmin
	g.GET(RouteList, h.list, admin)
	g.GET(RouteKey, h.get, admin)
	g.PUT(RouteKey, h.put, h.limitRejected, admin)
}

// requireAdmin is auth.RequireRole(super_admin) that first audits a PUT by
// an authenticated caller without the role. It runs before the key is
// looked at, so 401 and 403 are the same for every key.
func (h *handlers) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	guarded := auth.RequireRole(auth.RoleSuperAdmin)(next)
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		p, ok := auth.PrincipalFrom(ctx)
		if ok && !p.HasRole(auth.RoleSuperAdmin) && c.Request().Method == http.MethodPut {
			if err := h.svc.RecordForbidden(ctx, auditKey(c.Param("key")), p.Subject, meta(c)); err != nil {
				httpx.Logger(ctx, h.log).ErrorContext(ctx, "audit of a forbidden config update failed",
					"code", configsvc.CodeAuditFailed, "component", "system-config", "error", err)
			}
		}
		return guarded(c)
	}
}

// rejected audits a PUT the handler refuses itself (malformed key or body,
// 415, 413, bad If-Match) under the code and reason the caller is answered
// with, then returns err unchanged. Refusals past this point are audited
// by Service.Update. A failed audit is logged, never turned into a 500.
func (h *handlers) rejected(c echo.Context, err error) error {
	ctx := c.Request().Context()
	p, _ := auth.PrincipalFrom(ctx) // requireAdmin guarantees it
	e := httpx.Resolve(err)
	reason := e.Message
	if len(e.Details) > 0 {
		reason = e.Details[0].Reason
	}
	if aerr := h.svc.RecordRejected(ctx, auditKey(c.Param("key")), p.Subject, e.Code, reason, meta(c)); aerr != nil {
		httpx.Logger(ctx, h.log).ErrorContext(ctx, "audit of a rejected config update failed",
			"code", configsvc.CodeAuditFailed, "component", "system-config", "rejection", e.Code, "error", aerr)
	}
	return err
}

// auditKey keeps audit resource ids printable: a key outside the
// registered format is recorded under a fixed placeholder.
func auditKey(key string) string {
	if len(key) > MaxKeyLen || !auditKeyRE.MatchString(key) {
		return "invalid_key"
	}
	return key
}

var auditKeyRE = regexp.MustCompile(`^[\x21-\x7e]+$`)

func meta(c echo.Context) configsvc.Meta {
	id := httpx.RequestID(c.Request().Context())
	return configsvc.Meta{RequestID: id, CorrelationID: id}
}

func (h *handlers) list(c echo.Context) error {
	module, err := moduleParam(c)
	if err != nil {
		return err
	}
	views, err := h.svc.List(c.Request().Context(), module)
	if err != nil {
		return err
	}
	if views == nil {
		views = []sysconfig.View{}
	}
	noStore(c)
	return c.JSON(http.StatusOK, ListResponse{Items: views})
}

func (h *handlers) get(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	v, err := h.svc.Get(c.Request().Context(), key)
	if err != nil {
		return err
	}
	return view(c, v)
}

func (h *handlers) put(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return h.rejected(c, err)
	}
	body, err := decodeUpdate(c)
	if httpx.IsBudgetRefusal(err) {
		return err // the server's load, not the caller's rejection: not audited
	}
	if err != nil {
		return h.rejected(c, err)
	}
	p, _ := auth.PrincipalFrom(c.Request().Context()) // requireAdmin guarantees it
	v, err := h.svc.Update(c.Request().Context(), sysconfig.UpdateRequest{
		Key: key, Raw: body.Value, ExpectedVersion: body.Version, Actor: p.Subject,
	}, meta(c))
	if err != nil {
		return err
	}
	return view(c, v)
}

func view(c echo.Context, v sysconfig.View) error {
	noStore(c)
	c.Response().Header().Set("ETag", etag(v))
	return c.JSON(http.StatusOK, v)
}

// noStore keeps config views out of shared caches: they are admin data.
func noStore(c echo.Context) { c.Response().Header().Set(echo.HeaderCacheControl, "no-store") }
