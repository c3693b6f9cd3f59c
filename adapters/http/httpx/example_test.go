package httpx_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
)

var errNoStock = errors.New("inventory: out of stock")

func ExampleNewServer() {
	// One mapper per domain package, registered once in the app's wiring.
	stock := func(err error) (*httpx.Error, bool) {
		if errors.Is(err, errNoStock) {
			return httpx.Conflict("OUT_OF_STOCK", "库存不足：请减少数量或稍后再试"), true
		}
		return nil, false
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelError}))
	e := httpx.NewServer(httpx.ServerConfig{NewRequestID: func() string { return "req-00000001" }}, log, stock)
	e.POST("/orders", func(echo.Context) error { return fmt.Errorf("place order: %w", errNoStock) })

	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/orders", nil))
	fmt.Println(rec.Code, rec.Header().Get(httpx.HeaderRequestID))
	fmt.Print(rec.Body.String())
	// Output:
	// 409 req-00000001
	// {"error":{"code":"OUT_OF_STOCK","message":"库存不足：请减少数量或稍后再试","request_id":"req-00000001","retryable":false,"details":[]}}
}
