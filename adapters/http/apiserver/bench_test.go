package apiserver_test

import (
	"bytes"
	"fmt"

	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/idempotency"
)

var benchSecret = []byte("bench-secret-of-at-least-32-bytes-long!!")

// BenchmarkCreateBody measures bytes allocated per request of an
// idempotent JSON create through the whole server stack (request id,
// access log, recover, limits, auth, idempotency middleware, a handler
// that reads the body), for 1 KB and 1 MB bodies. docs/performance.md
// records the numbers.
func BenchmarkCreateBody(b *testing.B) {
	srv, err := apiserver.New(apiserver.Params{Logger: slog.New(slog.DiscardHandler), JWTSecret: benchSecret})
	if err != nil {
		b.Fatal(err)
	}
	fp, _ := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	idem, err := idemhttp.Middleware(idemhttp.Config{Operation: "bench.create", Fingerprinter: fp})
	if err != nil {
		b.Fatal(err)
	}
	srv.API.POST("/things", func(c echo.Context) error {
		body, err := readBody(c)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, map[string]int{"bytes": len(body)})
	}, idem)
	tok, err := auth.IssueToken(benchSecret, "bench-user", nil, time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{1 << 10, 1<<20 - 1<<10} {
		body := []byte(`{"data":"` + strings.Repeat("x", size-12) + `"}`)
		b.Run(fmt.Sprintf("%dKB", (len(body)+512)>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for i := 0; b.Loop(); i++ {
				r := httptest.NewRequest(http.MethodPost, "/api/v1/things", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "Bearer "+tok)
				r.Header.Set("Idempotency-Key", fmt.Sprintf("bench-key-%08d", i))
				w := httptest.NewRecorder()
				srv.Echo.ServeHTTP(w, r)
				if w.Code != http.StatusCreated {
					b.Fatalf("status %d: %s", w.Code, w.Body.String())
				}
			}
		})
	}
}

// readBody is how a create handler reads its body.
func readBody(c echo.Context) ([]byte, error) { return httpx.ReadBody(c) }
