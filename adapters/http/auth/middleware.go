package auth

import (
	"errors"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
)

// Responses are the same for every failure reason and every resource, so
// they reveal neither why a token failed nor whether a resource exists.
var (
	errUnauthenticated = httpx.Unauthorized(httpx.CodeUnauthenticated,
		"未登录或登录已过期：请在 Authorization 头中携带有效的 Bearer 令牌后重试")
	errForbidden = httpx.Forbidden(httpx.CodeForbidden, "当前账号无权执行此操作")
	// errSubjectInvalid is a correctly signed token whose subject the
	// service cannot use: the issuer must fix it, so it says so.
	errSubjectInvalid = httpx.Unauthorized(CodeSubjectInvalid,
		"令牌的 sub（用户标识）格式不正确：须为 1-128 字节、不含空白和控制字符的可打印字符，请联系令牌签发方修正")
)

// CodeSubjectInvalid is the 401 of a token whose "sub" breaks SubjectFormat.
const CodeSubjectInvalid = "TOKEN_SUBJECT_INVALID"

// Middleware authenticates every request with a and stores the Principal
// in the request context (PrincipalFrom). Missing or invalid credentials
// end the request with 401 UNAUTHENTICATED (TOKEN_SUBJECT_INVALID for a
// valid token whose subject breaks SubjectFormat) and
// "WWW-Authenticate: Bearer";
// any other Authenticator error is returned as is (a 500).
func Middleware(a Authenticator) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			p, err := a.Authenticate(r.Context(), r)
			if errors.Is(err, ErrUnauthenticated) {
				return Unauthenticated(c, err)
			}
			if err != nil {
				return err
			}
			c.SetRequest(r.WithContext(WithPrincipal(r.Context(), p)))
			return next(c)
		}
	}
}

// RequireRole returns middleware that lets only principals holding role
// through: 401 without a principal (Middleware must run first), 403
// FORBIDDEN "当前账号无权执行此操作" without the role.
func RequireRole(role string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok := PrincipalFrom(c.Request().Context())
			if !ok {
				return Unauthenticated(c, ErrUnauthenticated)
			}
			if !p.HasRole(role) {
				return errForbidden.WithCause(errors.New("auth: principal lacks role " + role))
			}
			return next(c)
		}
	}
}

// Unauthenticated returns the one 401 UNAUTHENTICATED answer (with cause
// for the log) and sets "WWW-Authenticate: Bearer" on c's response. Other
// packages that find no principal (idemhttp) answer with it too.
func Unauthenticated(c echo.Context, cause error) error {
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, "Bearer")
	if isSubjectInvalid(cause) {
		return errSubjectInvalid.WithCause(cause)
	}
	return errUnauthenticated.WithCause(cause)
}
