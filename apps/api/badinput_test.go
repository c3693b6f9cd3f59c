package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/apps/internal/testdomain"
)

// rawToken signs claims the way any HS256 issuer could, bypassing
// IssueToken's own checks.
func rawToken(t *testing.T, sub string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "roles": []string{testdomain.RoleWriter}, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
	}).SignedString(testSecret)
	require.NoError(t, err)
	return tok
}

// Item 5: a subject the token layer cannot use is a clear 401 at
// authentication, never a 500; a malformed path parameter is a 400 naming
// it before any SQL.
func TestPrincipalAndPathValidation(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	orders := testdomain.RouteOrders
	for name, sub := range map[string]string{"space": "John Doe", "129 bytes": strings.Repeat("a", 129), "NUL": "a\x00b", "tab": "a\tb"} {
		res := a.do(t, apitest.Request{Method: "POST", Path: orders, Token: rawToken(t, sub), Body: tdOrder(1000, 0), Header: map[string]string{"Idempotency-Key": "subject-check-1"}})
		require.Equal(t, http.StatusUnauthorized, res.Status, "%s: %s", name, res.Body)
		require.Equal(t, "TOKEN_SUBJECT_INVALID", res.Error.Code, name)
		res = a.do(t, apitest.Request{Method: "GET", Path: orders + "/" + missingOrder, Token: rawToken(t, sub)})
		require.Equal(t, http.StatusUnauthorized, res.Status, "%s: %s", name, res.Body)
	}
	tok := rawToken(t, "user@example.com")
	ok := a.do(t, apitest.Request{Method: "GET", Path: orders + "/" + a.tdCreate(t, tok, "subject-ok-1", 1000), Token: tok})
	require.Equal(t, http.StatusOK, ok.Status, ok.Body)

	agent := writer(t, "path-agent")
	for _, tc := range []struct{ path, field string }{
		{orders + "/%00", "id"},
		{orders + "/not-a-uuid", "id"},
		{orders + "/x%20y", "id"},
	} {
		res := a.do(t, apitest.Request{Method: "GET", Path: tc.path, Token: agent})
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", tc.path, res.Body)
		require.Equal(t, "REQUEST_INVALID", res.Error.Code)
		require.Len(t, res.Error.Details, 1, res.Body)
		require.Equal(t, tc.field, res.Error.Details[0].Field)
	}
}

// Item 6: a wrong method on an existing route is 405 with Allow, and an
// oversized header block is 431 in the envelope where the app can see it.
func TestMethodNotAllowedAndHeaderLimits(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	agent := writer(t, "method-agent")
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", testdomain.RouteOrders, "POST"},
		{"PUT", testdomain.RouteOrders + "/" + missingOrder, "GET"},
		{"DELETE", "/api/v1/system-configs/test.conf.flag", "GET, PUT"},
		{"POST", "/api/v1/system-configs", "GET"},
	} {
		res := apitest.Do(t, a.url, apitest.Request{Method: tc.method, Path: tc.path, Token: agent})
		require.Equal(t, http.StatusMethodNotAllowed, res.Status, "%s %s: %s", tc.method, tc.path, res.Body)
		require.Equal(t, "METHOD_NOT_ALLOWED", res.Error.Code)
		require.Equal(t, tc.allow, res.Header.Get("Allow"), "%s %s", tc.method, tc.path)
	}
	res := apitest.Do(t, a.url, apitest.Request{Method: "DELETE", Path: "/api/v1/nothing-here", Token: agent})
	require.Equal(t, http.StatusNotFound, res.Status)
	require.Equal(t, "ROUTE_NOT_FOUND", res.Error.Code)

	big := apitest.Do(t, a.url, apitest.Request{Method: "GET", Path: testdomain.RouteOrders + "/" + missingOrder, Token: agent, Header: map[string]string{"X-Filler": strings.Repeat("x", 20<<10)}})
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, big.Status, big.Body)
	require.Equal(t, "HEADERS_TOO_LARGE", big.Error.Code)
	require.NotEmpty(t, big.Error.RequestID)

	// Bytes no parser accepts are answered by Go's server itself: 400
	// without the envelope, as documented.
	c, err := net.Dial("tcp", strings.TrimPrefix(a.url, "http://"))
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "400")
}

// Item 7: JSON routes refuse other content types with 415 naming the
// expected type.
func TestUnsupportedMediaType(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	agent := writer(t, "media-agent")
	order := tdOrder(1000, 0)
	for name, ct := range map[string]string{"text/plain": "text/plain", "none": "", "form": "application/x-www-form-urlencoded"} {
		r := apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: order, Header: map[string]string{"Idempotency-Key": "media-check-" + strings.ReplaceAll(name, "/", "-")}}
		if ct != "" {
			r.Header["Content-Type"] = ct
		}
		res := a.sendNoCT(t, r, ct == "")
		require.Equal(t, http.StatusUnsupportedMediaType, res.Status, "%s: %s", name, res.Body)
		require.Equal(t, "UNSUPPORTED_MEDIA_TYPE", res.Error.Code)
		require.Contains(t, res.Error.Message, "application/json")
	}
	res := a.do(t, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: order, Header: map[string]string{"Idempotency-Key": "media-check-ok", "Content-Type": "application/json; charset=utf-8"}})
	require.Equal(t, http.StatusCreated, res.Status, res.Body)
	res = a.sendNoCT(t, apitest.Request{Method: "PUT", Path: configsPath + keyFlag, Token: admin(t), Body: `{"value":true}`}, true)
	require.Equal(t, http.StatusUnsupportedMediaType, res.Status, res.Body)
}

// sendNoCT is do, optionally with the Content-Type header removed.
func (a *apiApp) sendNoCT(t *testing.T, r apitest.Request, strip bool) response {
	t.Helper()
	if !strip {
		return a.do(t, r)
	}
	hr, err := http.NewRequestWithContext(t.Context(), r.Method, a.url+r.Path, strings.NewReader(r.Body))
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+r.Token)
	for k, v := range r.Header {
		hr.Header.Set(k, v)
	}
	hres, err := testClient.Do(hr)
	require.NoError(t, err)
	defer hres.Body.Close()
	var sb strings.Builder
	_, _ = bufio.NewReader(hres.Body).WriteTo(&sb)
	res := apitest.Response{Status: hres.StatusCode, Header: hres.Header, Body: sb.String(), Request: hr}
	require.NoError(t, jsonUnmarshalError(res.Body, &res.Error))
	return response{Response: res, route: checkContract(t, res)}
}

func jsonUnmarshalError(body string, e *apitest.Error) error {
	var env struct {
		Error *apitest.Error `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return err
	}
	if env.Error != nil {
		*e = *env.Error
	}
	return nil
}

// Item 8: optional issuer and audience checks, a maximum lifetime, and
// always: no future iat beyond the leeway, no crit header.
func TestJWTPolicy(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{tune: func(c *config) {
		c.JWTIssuer, c.JWTAudience, c.JWTMaxLifetime = "https://id.example.com", "july-api", 2*time.Hour
	}})
	now := time.Now()
	sign := func(claims jwt.MapClaims, hdr map[string]any) string {
		tk := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		for k, v := range hdr {
			tk.Header[k] = v
		}
		s, err := tk.SignedString(testSecret)
		require.NoError(t, err)
		return s
	}
	base := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "jwt-user", "roles": []string{testdomain.RoleWriter}, "iss": "https://id.example.com", "aud": "july-api",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	}
	with := func(k string, v any) jwt.MapClaims {
		c := base()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	// Authenticated: the route answers (no such order), not 401.
	res := a.do(t, apitest.Request{Method: "GET", Path: testdomain.RouteOrders + "/" + missingOrder, Token: sign(base(), nil)})
	require.Equal(t, http.StatusNotFound, res.Status, res.Body)
	require.Equal(t, testdomain.CodeNotFound, res.Error.Code, res.Body)
	for name, tok := range map[string]string{
		"wrong issuer":   sign(with("iss", "https://evil.example.com"), nil),
		"no issuer":      sign(with("iss", nil), nil),
		"wrong audience": sign(with("aud", "other-api"), nil),
		"no audience":    sign(with("aud", nil), nil),
		"future iat":     sign(with("iat", now.Add(10*time.Minute).Unix()), nil),
		"too long-lived": sign(with("exp", now.Add(3*time.Hour).Unix()), nil),
		"crit header":    sign(base(), map[string]any{"crit": []string{"exp"}}),
		"long, no iat":   sign(jwt.MapClaims{"sub": "jwt-user", "iss": "https://id.example.com", "aud": "july-api", "exp": now.Add(30 * 24 * time.Hour).Unix()}, nil),
	} {
		res := a.do(t, apitest.Request{Method: "GET", Path: testdomain.RouteOrders + "/" + missingOrder, Token: tok})
		require.Equal(t, http.StatusUnauthorized, res.Status, "%s: %s", name, res.Body)
		require.Equal(t, "UNAUTHENTICATED", res.Error.Code, name)
	}
}
