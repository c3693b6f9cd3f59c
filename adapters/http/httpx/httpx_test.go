package httpx_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/httpx"

	"github.com/july/template/contracttests/testinfra"
)

var errStale = errors.New("domain: row version is stale")

// staleMapper is what a domain package's mapper looks like.
func staleMapper(err error) (*httpx.Error, bool) {
	if errors.Is(err, errStale) {
		e := httpx.Conflict("VERSION_CONFLICT", "数据已被他人修改：请刷新后重试")
		e.Retryable = true
		return e, true
	}
	return nil, false
}

const leak = "pq: password=hunter2 host=10.0.0.1"

type bundle struct {
	url  string
	logs *testinfra.LogBuffer
}

func setup(t *testing.T) bundle {
	t.Helper()
	logs := &testinfra.LogBuffer{}
	e := httpx.NewServer(httpx.ServerConfig{BodyLimit: 1024}, newLogger(logs), staleMapper)
	e.GET("/ok", func(c echo.Context) error {
		httpx.Logger(c.Request().Context(), newLogger(logs)).Info("handler ran")
		return c.JSON(http.StatusOK, map[string]string{"ok": "yes"})
	})
	e.GET("/boom", func(echo.Context) error {
		return fmt.Errorf("load user: %w", errors.New(leak))
	})
	e.GET("/panic", func(echo.Context) error { panic("kaboom " + leak) })
	e.GET("/stale", func(echo.Context) error { return fmt.Errorf("update: %w", errStale) })
	e.GET("/explicit", func(echo.Context) error {
		return httpx.Unprocessable("AMOUNT_INVALID", "金额必须大于 0").
			WithDetails(httpx.Detail{Field: "amount", Reason: "必须大于 0"})
	})
	bind := func(c echo.Context) error {
		var in struct {
			N int    `json:"n"`
			S string `json:"s"`
		}
		if err := c.Bind(&in); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, in)
	}
	e.POST("/bind", bind)
	e.POST("/upload", bind, httpx.BodyLimit(4096))
	httpx.RegisterHealth(e, 50*time.Millisecond)
	e.GET("/readyz-bad", httpx.Readyz(50*time.Millisecond,
		httpx.Check{Name: "postgres", Check: func(context.Context) error { return errors.New(leak) }},
		httpx.Check{Name: "redis", Check: func(context.Context) error { return nil }},
		httpx.Check{Name: "slow", Check: func(ctx context.Context) error { <-ctx.Done(); time.Sleep(time.Second); return nil }},
	))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return bundle{url: srv.URL, logs: logs}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		clientID string
		keep     bool
	}{
		{"accepted", "client-req:0001_a.b", true},
		{"malformed replaced", "bad id with spaces", false},
		{"too short replaced", "abc", false},
		{"generated", "", false},
	}
	paths := map[string]int{"/ok": 200, "/nope": 404, "/boom": 500, "/panic": 500}
	for _, tt := range tests {
		for path, status := range paths {
			t.Run(tt.name+path, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				h := map[string]string{}
				if tt.clientID != "" {
					h[httpx.HeaderRequestID] = tt.clientID
				}
				res := do(t, http.MethodGet, b.url+path, nil, h)
				require.Equal(t, status, res.status, "GET %s", path)
				id := res.header.Get(httpx.HeaderRequestID)
				require.True(t, httpx.ValidRequestID(id), "id %q", id)
				if tt.keep {
					require.Equal(t, tt.clientID, id)
				} else {
					require.NotEqual(t, tt.clientID, id)
				}
				if status >= 400 {
					require.Equal(t, id, decode(t, res).Error.RequestID, "body %s", res.body)
				}
				lines := b.logs.Lines(t)
				require.NotEmpty(t, lines, "GET %s logged nothing", path)
				for _, l := range lines {
					require.Equal(t, id, l["request_id"], "log line %v", l)
				}
			})
		}
	}
}

func TestErrorHandler(t *testing.T) {
	t.Parallel()
	big := `{"s":"` + strings.Repeat("x", 2000) + `"}`
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
		retryable                bool
		detail                   string
	}{
		{"mapped domain error", "GET", "/stale", "", 409, "VERSION_CONFLICT", true, ""},
		{"explicit error with details", "GET", "/explicit", "", 422, "AMOUNT_INVALID", false, "amount"},
		{"unknown route", "GET", "/nope", "", 404, httpx.CodeRouteNotFound, false, ""},
		{"wrong method", "DELETE", "/ok", "", 405, httpx.CodeMethodNotAllowed, false, ""},
		{"bad json", "POST", "/bind", `{"n":`, 400, httpx.CodeRequestInvalid, false, ""},
		{"wrong type names field", "POST", "/bind", `{"n":"x"}`, 400, httpx.CodeRequestInvalid, false, "n"},
		{"body over server limit", "POST", "/bind", big, 413, httpx.CodeBodyTooLarge, false, ""},
		{"route raises the limit", "POST", "/upload", big, 200, "", false, ""},
		{"body over route limit", "POST", "/upload", `{"s":"` + strings.Repeat("x", 5000) + `"}`, 413, httpx.CodeBodyTooLarge, false, ""},
		{"unknown error", "GET", "/boom", "", 500, httpx.CodeInternal, true, ""},
		{"panic", "GET", "/panic", "", 500, httpx.CodeInternal, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var body *strings.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			h := map[string]string{"Content-Type": "application/json"}
			var res response
			if body == nil {
				res = do(t, tt.method, b.url+tt.path, nil, h)
			} else {
				res = do(t, tt.method, b.url+tt.path, body, h)
			}
			require.Equal(t, tt.status, res.status, "%s %s: %s", tt.method, tt.path, res.body)
			if tt.status < 400 {
				return
			}
			env := decode(t, res)
			require.Equal(t, tt.code, env.Error.Code, "body %s", res.body)
			require.Equal(t, tt.retryable, env.Error.Retryable, "body %s", res.body)
			require.NotEmpty(t, env.Error.Message)
			require.NotNil(t, env.Error.Details, "details must be a list: %s", res.body)
			if tt.detail != "" {
				require.Len(t, env.Error.Details, 1, "body %s", res.body)
				require.Equal(t, tt.detail, env.Error.Details[0].Field)
			}
			if tt.status >= 500 {
				require.Equal(t, httpx.MsgInternal, env.Error.Message)
			}
		})
	}
}

func TestChunkedBodyOverLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// An io.Reader of unknown length is sent chunked: no Content-Length to check up front.
	pr := strings.NewReader(`{"s":"` + strings.Repeat("y", 3000) + `"}`)
	req, err := http.NewRequest(http.MethodPost, b.url+"/bind", struct{ *strings.Reader }{pr})
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := testClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "content length %d", req.ContentLength)
}

func TestInternalErrorLeaksNothing(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/boom", "/panic"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			res := do(t, http.MethodGet, b.url+path, nil, nil)
			require.Equal(t, http.StatusInternalServerError, res.status)
			for _, s := range []string{"hunter2", "10.0.0.1", "pq:", "kaboom", "goroutine", ".go:"} {
				require.NotContains(t, res.body, s, "GET %s response", path)
			}
			var errorLines []map[string]any
			for _, l := range b.logs.Lines(t) {
				if l["level"] == "ERROR" {
					errorLines = append(errorLines, l)
				}
			}
			require.Len(t, errorLines, 1, "exactly one ERROR line for GET %s: %s", path, b.logs.String())
			line := errorLines[0]
			require.Equal(t, httpx.CodeInternal, line["code"])
			if path == "/boom" {
				require.Equal(t, "request failed", line["msg"])
				require.Contains(t, line["error"], "load user: pq: password=[REDACTED] host=10.0.0.1", "cause chain in the log, secrets redacted")
				require.NotContains(t, line["error"], "hunter2", "a cause's secrets never reach the log")
			} else {
				require.Equal(t, "panic recovered", line["msg"])
				require.Contains(t, line["panic"], "kaboom")
				require.Contains(t, line["stack"], "goroutine")
			}
		})
	}
}

func TestRejectionsLogAtInfo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := do(t, http.MethodGet, b.url+"/stale", nil, nil)
	require.Equal(t, http.StatusConflict, res.status)
	lines := b.logs.Lines(t)
	require.Len(t, lines, 1, "logs: %s", b.logs.String())
	require.Equal(t, "INFO", lines[0]["level"])
	require.Equal(t, "request rejected", lines[0]["msg"])
	require.Equal(t, "VERSION_CONFLICT", lines[0]["code"])
	require.Equal(t, "/stale", lines[0]["route"])
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)

	res := do(t, http.MethodGet, b.url+"/healthz", nil, nil)
	require.Equal(t, http.StatusOK, res.status)
	require.JSONEq(t, `{"status":"ok"}`, res.body)

	res = do(t, http.MethodGet, b.url+"/readyz", nil, nil)
	require.Equal(t, http.StatusOK, res.status)
	require.JSONEq(t, `{"status":"ok"}`, res.body)

	start := time.Now()
	res = do(t, http.MethodGet, b.url+"/readyz-bad", nil, nil)
	require.Less(t, time.Since(start), 900*time.Millisecond, "readiness must not wait for a hung check")
	require.Equal(t, http.StatusServiceUnavailable, res.status)
	env := decode(t, res)
	require.Equal(t, httpx.CodeNotReady, env.Error.Code)
	require.True(t, env.Error.Retryable)
	var failed []string
	for _, d := range env.Error.Details {
		failed = append(failed, d.Field)
	}
	require.Equal(t, []string{"postgres", "slow"}, failed)
	require.NotContains(t, res.body, "hunter2")
	require.Contains(t, b.logs.String(), "postgres: pq: password=[REDACTED] host=10.0.0.1", "the cause belongs in the log")
	require.NotContains(t, b.logs.String(), "hunter2", "with its secrets redacted")
}

func TestErrorHelpers(t *testing.T) {
	t.Parallel()
	cause := errors.New("boom")
	base := httpx.NotFound("THING_NOT_FOUND", "对象不存在")
	got := base.WithCause(cause).WithDetails(httpx.Detail{Field: "id", Reason: "不存在"})
	require.Nil(t, base.Err, "WithCause must not modify its receiver")
	require.Empty(t, base.Details, "WithDetails must not modify its receiver")
	require.ErrorIs(t, got, cause)
	require.Equal(t, http.StatusNotFound, got.Status)
	require.Equal(t, "http Not Found: THING_NOT_FOUND: boom", got.Error())
	require.Same(t, got, httpx.Resolve(fmt.Errorf("wrapped: %w", got)))
	require.Equal(t, httpx.CodeInternal, httpx.Resolve(cause).Code)
}

// GO-2026-6872 (echo v4, no fix): echo's default extractor believes
// X-Forwarded-For, so a caller could choose the IP the access log and any
// IP-keyed limit see. NewServer takes the socket's peer address instead;
// tools/vuln-exceptions.txt accepts the finding on this mitigation.
func TestClientIPIgnoresForwardingHeaders(t *testing.T) {
	t.Parallel()
	e := httpx.NewServer(httpx.ServerConfig{}, newLogger(&testinfra.LogBuffer{}))
	e.GET("/ip", func(c echo.Context) error { return c.String(http.StatusOK, c.RealIP()) })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/ip", nil)
	require.NoError(t, err)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Real-IP", "203.0.113.10")
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", string(body), "the client IP is the peer address, not a header the caller chose")
}

// A draining instance answers every probe 503 SHUTTING_DOWN: the expected
// end of its life, logged at INFO, not one ERROR per probe.
func TestReadyzWhileDrainingIsNotAnError(t *testing.T) {
	t.Parallel()
	logs := &testinfra.LogBuffer{}
	e := httpx.NewServer(httpx.ServerConfig{}, newLogger(logs))
	h := &httpx.Health{}
	h.Register(e)
	h.Drain()
	for range 3 {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.Contains(t, rec.Body.String(), httpx.CodeShuttingDown)
	}
	lines := logs.Lines(t)
	require.Len(t, lines, 3, logs.String())
	for _, l := range lines {
		require.Equal(t, "INFO", l["level"], logs.String())
		require.Equal(t, httpx.CodeShuttingDown, l["code"])
	}
}
