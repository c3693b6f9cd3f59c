package accesslog_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
)

type echoContext = echo.Context

// newServer returns a server with the access log (cfg) in front of a
// reflecting /echo route and the health routes.
func newServer(cfg accesslog.Config) *echo.Echo {
	var mw []echo.MiddlewareFunc
	if cfg.Logger != nil {
		mw = append(mw, accesslog.New(cfg))
	}
	e := httpx.NewServer(httpx.ServerConfig{Middleware: mw}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e.POST("/echo", func(c echo.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, c.Request().Header.Get("Content-Type"), body)
	})
	httpx.RegisterHealth(e, 0)
	return e
}

func serve(e *echo.Echo, method, path, ct string, body []byte) (int, []byte) {
	r := httptest.NewRequest(method, path+"?page=2&access_token=abc", bytes.NewReader(body))
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, r)
	return w.Code, w.Body.Bytes()
}

// benchBody is a JSON document of about size bytes with a secret per item.
func benchBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < size-2; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"item %d","password":"p-%d"}`, i, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func benchmarkAccessLog(b *testing.B, size int) {
	body := benchBody(size)
	servers := []struct {
		name string
		e    *echo.Echo
	}{
		{"bare", newServer(accesslog.Config{})},
		{"accesslog", newServer(accesslog.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})},
	}
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if status, _ := serve(s.e, http.MethodPost, "/echo", "application/json", body); status != http.StatusOK {
					b.Fatalf("status %d", status)
				}
			}
		})
	}
}

// BenchmarkAccessLog1KB measures the middleware on a 1 KB JSON request
// echoed back: compare the accesslog and bare sub-benchmarks.
func BenchmarkAccessLog1KB(b *testing.B) { benchmarkAccessLog(b, 1<<10) }

// BenchmarkAccessLog50KB is BenchmarkAccessLog1KB at the 50 KB log limit.
func BenchmarkAccessLog50KB(b *testing.B) { benchmarkAccessLog(b, 50<<10) }
