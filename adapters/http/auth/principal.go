package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
)

// RoleSuperAdmin may manage system configuration.
const RoleSuperAdmin = "super_admin"

// ErrUnauthenticated is matched (errors.Is) by every error an
// Authenticator returns for a caller without valid credentials. Other
// errors mean the authenticator itself failed and become a 500.
var ErrUnauthenticated = errors.New("auth: request not authenticated: send a valid bearer token")

// Principal is the authenticated caller.
type Principal struct {
	// Subject is the stable user id (the token's "sub").
	Subject string
	// Roles are the caller's role names.
	Roles []string
}

// HasRole reports whether p holds role.
func (p Principal) HasRole(role string) bool { return slices.Contains(p.Roles, role) }

// Authenticator is the port that turns a request's credentials into a
// Principal. It returns an error matching ErrUnauthenticated when the
// credentials are missing or invalid.
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (Principal, error)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal Middleware stored, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// UserID returns the authenticated subject of c's request, or "". It fits
// accesslog.Config.UserIDFunc.
func UserID(c echo.Context) string {
	p, _ := PrincipalFrom(c.Request().Context())
	return p.Subject
}
