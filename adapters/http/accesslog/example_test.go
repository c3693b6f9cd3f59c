package accesslog_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/redaction"
)

func ExampleNew() {
	// Drop the volatile attributes so the output is stable.
	stable := func(_ []string, a slog.Attr) slog.Attr {
		switch a.Key {
		case slog.TimeKey, "latency_ms", "ip", "user_agent", "referer", "request_id":
			return slog.Attr{}
		}
		return a
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: stable}))
	access := accesslog.New(accesslog.Config{
		Logger:   log,
		Redactor: &redaction.Redactor{HashKey: []byte("per-deployment secret")},
		// A login route is default-deny: only what it declares safe (and
		// the outcome and subject ids) keeps a value.
		Routes: map[string]accesslog.RoutePolicy{"/login": {Policy: redaction.PolicyLogin, Safe: []string{"user", "page"}}},
	})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{access}}, log)
	e.POST("/login", func(c echo.Context) error {
		var in map[string]string
		if err := c.Bind(&in); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]string{"user_id": "alice", "access_token": "tok-123456789", "phone": "13800138000"})
	})

	body := `{"user":"alice","password":"hunter2","code":"123456"}`
	status, _ := serve(e, http.MethodPost, "/login", "application/json", []byte(body))
	fmt.Println(status)
	// Output:
	// {"level":"INFO","msg":"access","method":"POST","route":"/login","path":"/login","query":"page=2&access_token=[REDACTED]","status":200,"user_id":"","req":{"mode":"json","size":53,"truncated":false,"text":"{\"user\":\"alice\",\"password\":\"[REDACTED]\",\"code\":\"[REDACTED]\"}"},"resp":{"mode":"json","size":73,"truncated":false,"text":"{\"access_token\":\"[REDACTED]\",\"phone\":\"[REDACTED:string:11]\",\"user_id\":\"alice\"}"}}
	// 200
}
