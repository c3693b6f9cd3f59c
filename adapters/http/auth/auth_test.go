package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
)

var (
	secret = []byte("0123456789abcdef0123456789abcdef-test")
	now    = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
)

func setup(t *testing.T, a auth.Authenticator) string {
	t.Helper()
	e := httpx.NewServer(httpx.ServerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g := e.Group("/api/v1/admin", auth.Middleware(a), auth.RequireRole(auth.RoleSuperAdmin))
	// Only id 1 exists: 401 and 403 must look the same for both.
	g.GET("/things/:id", func(c echo.Context) error {
		if c.Param("id") != "1" {
			return httpx.NotFound("THING_NOT_FOUND", "对象不存在")
		}
		return c.JSON(http.StatusOK, map[string]string{"id": "1", "by": auth.UserID(c)})
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL
}

func newJWT(t *testing.T) *auth.JWT {
	t.Helper()
	j, err := auth.NewJWT(secret, 5*time.Second, func() time.Time { return now })
	require.NoError(t, err)
	return j
}

func issue(t *testing.T, key []byte, sub string, roles []string, at time.Time) string {
	t.Helper()
	tok, err := auth.IssueToken(key, sub, roles, time.Hour, at)
	require.NoError(t, err)
	return tok
}

func sign(t *testing.T, m jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(m, claims).SignedString(key)
	require.NoError(t, err)
	return tok
}

type result struct {
	status          int
	code, message   string
	wwwAuthenticate string
}

func get(t *testing.T, url, authz string) result {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	res, err := testClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if res.StatusCode >= 400 {
		require.NoError(t, json.NewDecoder(res.Body).Decode(&env))
	}
	return result{res.StatusCode, env.Error.Code, env.Error.Message, res.Header.Get("WWW-Authenticate")}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	valid := jwt.MapClaims{"sub": "u1", "roles": []string{auth.RoleSuperAdmin}, "exp": now.Add(time.Hour).Unix()}
	otherSecret := []byte("another-secret-another-secret-!!")

	tests := []struct {
		name   string
		authz  string
		status int
		code   string
	}{
		{"no header", "", 401, httpx.CodeUnauthenticated},
		{"not bearer", "Basic dTE6cGFzcw==", 401, httpx.CodeUnauthenticated},
		{"garbage token", "Bearer not.a.jwt", 401, httpx.CodeUnauthenticated},
		{"bad signature", "Bearer " + issue(t, otherSecret, "u1", []string{auth.RoleSuperAdmin}, now), 401, httpx.CodeUnauthenticated},
		{"alg none", "Bearer " + sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid), 401, httpx.CodeUnauthenticated},
		{"alg RS256", "Bearer " + sign(t, jwt.SigningMethodRS256, rsaKey, valid), 401, httpx.CodeUnauthenticated},
		{"alg HS512 same secret", "Bearer " + sign(t, jwt.SigningMethodHS512, secret, valid), 401, httpx.CodeUnauthenticated},
		{"expired", "Bearer " + issue(t, secret, "u1", []string{auth.RoleSuperAdmin}, now.Add(-2*time.Hour)), 401, httpx.CodeUnauthenticated},
		{"no exp", "Bearer " + sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "u1", "roles": []string{auth.RoleSuperAdmin}}), 401, httpx.CodeUnauthenticated},
		{"no sub", "Bearer " + sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"roles": []string{auth.RoleSuperAdmin}, "exp": now.Add(time.Hour).Unix()}), 401, httpx.CodeUnauthenticated},
		{"roles not a list", "Bearer " + sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "u1", "roles": auth.RoleSuperAdmin, "exp": now.Add(time.Hour).Unix()}), 401, httpx.CodeUnauthenticated},
		{"not yet valid", "Bearer " + issue(t, secret, "u1", []string{auth.RoleSuperAdmin}, now.Add(time.Minute)), 401, httpx.CodeUnauthenticated},
		{"valid without role", "Bearer " + issue(t, secret, "u2", []string{"operator"}, now), 403, httpx.CodeForbidden},
		{"valid without roles claim", "Bearer " + issue(t, secret, "u2", nil, now), 403, httpx.CodeForbidden},
		{"admin", "Bearer " + issue(t, secret, "u1", []string{"operator", auth.RoleSuperAdmin}, now), 200, ""},
		{"admin within leeway", "bearer " + sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "u1", "roles": []string{auth.RoleSuperAdmin}, "exp": now.Add(-3 * time.Second).Unix()}), 200, ""},
	}
	url := setup(t, newJWT(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			existing := get(t, url+"/api/v1/admin/things/1", tt.authz)
			require.Equal(t, tt.status, existing.status, "existing resource, authz %q", tt.authz)
			require.Equal(t, tt.code, existing.code)
			if tt.status == 200 {
				missing := get(t, url+"/api/v1/admin/things/999", tt.authz)
				require.Equal(t, http.StatusNotFound, missing.status, "authorised caller sees real 404")
				return
			}
			// Decided before the lookup: the missing resource answers identically.
			missing := get(t, url+"/api/v1/admin/things/999", tt.authz)
			require.Equal(t, existing, missing, "authz %q", tt.authz)
			if tt.status == 401 {
				require.Equal(t, "Bearer", existing.wwwAuthenticate)
			} else {
				require.Equal(t, "当前账号无权执行此操作", existing.message)
			}
		})
	}
}

type authFunc func(context.Context, *http.Request) (auth.Principal, error)

func (f authFunc) Authenticate(ctx context.Context, r *http.Request) (auth.Principal, error) {
	return f(ctx, r)
}

func TestAuthenticatorFailureIsInternal(t *testing.T) {
	t.Parallel()
	url := setup(t, authFunc(func(context.Context, *http.Request) (auth.Principal, error) {
		return auth.Principal{}, errors.New("session store: connection refused")
	}))
	res := get(t, url+"/api/v1/admin/things/1", "Bearer x")
	require.Equal(t, http.StatusInternalServerError, res.status)
	require.Equal(t, httpx.CodeInternal, res.code)
	require.Empty(t, res.wwwAuthenticate)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, err := auth.NewJWT([]byte("short"), 0, nil)
	require.ErrorIs(t, err, auth.ErrWeakSecret)
	_, err = auth.IssueToken([]byte("short"), "u1", nil, time.Hour, now)
	require.ErrorIs(t, err, auth.ErrWeakSecret)
	_, err = auth.IssueToken(secret, "", nil, time.Hour, now)
	require.Error(t, err, "empty subject")
	_, err = auth.IssueToken(secret, "u1", nil, 0, now)
	require.Error(t, err, "zero ttl")
}

func TestAuthenticateErrors(t *testing.T) {
	t.Parallel()
	j := newJWT(t)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+issue(t, secret, "u9", []string{"a", "b"}, now))
	p, err := j.Authenticate(context.Background(), r)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{Subject: "u9", Roles: []string{"a", "b"}}, p)
	require.True(t, p.HasRole("b"))
	require.False(t, p.HasRole("c"))

	r.Header.Set("Authorization", "Bearer "+issue(t, secret, "u9", nil, now.Add(-2*time.Hour)))
	_, err = j.Authenticate(context.Background(), r)
	require.ErrorIs(t, err, auth.ErrUnauthenticated)
	require.ErrorIs(t, err, jwt.ErrTokenExpired)
}
