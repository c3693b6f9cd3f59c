package idemhttp_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/idempotency"
)

// A create route: CaptureKey runs before httpx.RequestIDs, the middleware
// validates the key and hands the handler its Key.
func ExampleMiddleware() {
	fp, _ := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	idem, err := idemhttp.Middleware(idemhttp.Config{
		Operation:     "order.create",
		Fingerprinter: fp,
		PrincipalFunc: func(echo.Context) (string, bool) { return "user-1", true },
	})
	if err != nil {
		panic(err)
	}
	e := httpx.NewServer(httpx.ServerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)), idemhttp.MapError)
	e.Pre(idemhttp.CaptureKey())
	e.POST("/orders", func(c echo.Context) error {
		key, _ := idemhttp.KeyFrom(c.Request().Context())
		// ... pgidem.Insert(ctx, tx, order, key) in the business transaction ...
		return c.String(http.StatusCreated, key.Scope.String()+" "+key.RequestID+"\n")
	}, idem)

	for _, id := range []string{"order-7f3a9c21", "", "no spaces allowed"} {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"amount_cents":100}`))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		if id != "" {
			req.Header.Set(echo.HeaderXRequestID, id)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", firstLine(rec.Body.String()))
	}
	// Output:
	// 201 order.create:user-1 order-7f3a9c21
	// 400 IDEMPOTENCY_KEY_MISSING
	// 400 IDEMPOTENCY_KEY_INVALID
}

func firstLine(body string) string {
	if i := strings.Index(body, `"code":"`); i >= 0 {
		code := body[i+len(`"code":"`):]
		return code[:strings.IndexByte(code, '"')] + "\n"
	}
	return body
}
