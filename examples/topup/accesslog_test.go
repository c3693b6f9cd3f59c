package topup_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/redaction"
	"github.com/july/template/examples/topup"

	"github.com/july/template/contracttests/testinfra"
)

// TestAccessLogKeepsOnlyDeclaredFields sends a top-up create through the
// access log with the domain's own route policies: the declared
// troubleshooting fields stay readable, the agent id is correlated by a
// keyed hash, and everything else (a 付款码, an SMS code, a note, a
// field added later) is logged as its shape only.
func TestAccessLogKeepsOnlyDeclaredFields(t *testing.T) {
	t.Parallel()
	routes := map[string]accesslog.RoutePolicy{}
	for _, r := range topup.AccessRoutes() {
		routes[r.Path] = r.RoutePolicy
	}
	logs := &testinfra.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	mw := accesslog.New(accesslog.Config{Logger: log, Routes: routes, Redactor: &redaction.Redactor{HashKey: []byte("k")}})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{mw}}, log)
	e.POST("/api/v1/topups", func(c echo.Context) error {
		if _, err := io.ReadAll(c.Request().Body); err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, map[string]any{
			"topup_id": "T-1001", "agent_id": "agent-7788", "amount_cents": 1500, "channel": "wechat",
			"status": "pending", "pay_url": "https://pay.example/p?prepay_id=wx123", "created_at": "2026-01-02T03:04:05Z",
			"buyer_nick": "NickSecret42",
		})
	})
	body := `{"amount_cents":1500,"channel":"wechat","dynamic_id":"286612345678901234","code":"482913","memo":"MemoSecret9"}`
	r := httptest.NewRequest(http.MethodPost, "/api/v1/topups?src=AppSecret31", bytes.NewReader([]byte(body)))
	r.Header.Set("Content-Type", "application/json")
	e.ServeHTTP(httptest.NewRecorder(), r)

	out := logs.String()
	for _, gone := range []string{"286612345678901234", "482913", "MemoSecret9", "agent-7788", "NickSecret42", "prepay_id", "AppSecret31"} {
		require.NotContains(t, out, gone)
	}
	for _, kept := range []string{`\"topup_id\":\"T-1001\"`, `\"amount_cents\":1500`, `\"channel\":\"wechat\"`,
		`\"status\":\"pending\"`, `\"created_at\":\"2026-01-02T03:04:05Z\"`, `\"agent_id\":\"[REDACTED:string:10:`,
		`\"memo\":\"[REDACTED:string:11]\"`} {
		require.Contains(t, out, kept)
	}
}
