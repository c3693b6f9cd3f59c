package httpx

import (
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"
)

// RegisterPprof serves Go's runtime profiles (net/http/pprof) under
// /debug/pprof/ on e. Put it on an admin listener only, and only when an
// operator asks (ADMIN_PPROF): a profile costs CPU while it runs and
// shows the code's paths and the command line. Importing net/http/pprof
// also registers it on http.DefaultServeMux, which no app serves.
func RegisterPprof(e *echo.Echo) {
	g := e.Group("/debug/pprof")
	g.GET("/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	g.GET("/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	g.GET("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.POST("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.GET("/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	// Index serves the list and each named profile (heap, goroutine, ...).
	g.GET("/*", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
}
