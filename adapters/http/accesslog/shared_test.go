package accesslog_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/contracttests/testinfra"
)

// TestSharedBodyIsLoggedRedacted: a handler that reads its body with
// httpx.ReadBody holds it once; the access log takes that shared slice
// instead of a copy of its own, and still redacts and caps it.
func TestSharedBodyIsLoggedRedacted(t *testing.T) {
	t.Parallel()
	logs := &testinfra.LogBuffer{}
	log := newLogger(logs)
	const capBytes = 2 << 10
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{
		accesslog.New(accesslog.Config{Logger: log, CaptureBytes: capBytes}),
	}}, log)
	e.POST("/things", func(c echo.Context) error {
		body, err := httpx.ReadBody(c)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, map[string]int{"bytes": len(body)})
	})

	post := func(id, body string) {
		r := httptest.NewRequest(http.MethodPost, "/things", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Request-ID", id)
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		require.Equal(t, http.StatusCreated, w.Code, w.Body.String())
	}

	post("shared-small", `{"amount":100,"password":"`+password+`"}`)
	l := line(t, logs, "access", "shared-small")
	require.Equal(t, `{"amount":100,"password":"[REDACTED]"}`, field(l, "req.text"), "rule: the shared body is logged, redacted")
	require.NotContains(t, decoded(t, logs), password)
	require.Equal(t, false, field(l, "req.truncated"), "a small body is whole")

	post("shared-large", `{"data":"`+strings.Repeat("x", 3*capBytes)+`"}`)
	l = line(t, logs, "access", "shared-large")
	require.Equal(t, true, field(l, "req.truncated"), "rule: a shared body over the cap is logged truncated: %v", l["req"])
}
