package apiserver

import (
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// methodNotAllowed is the authenticated group's catch-all: a path that a
// route serves under other methods answers 405 METHOD_NOT_ALLOWED with
// Allow listing them (RFC 9110 §15.5.6), anything else 404
// ROUTE_NOT_FOUND. Echo's group catch-all would answer 404 for both.
func methodNotAllowed(e *echo.Echo) echo.HandlerFunc {
	return func(c echo.Context) error {
		if allow := allowed(e, c.Request().URL.Path); len(allow) > 0 {
			c.Response().Header().Set(echo.HeaderAllow, strings.Join(allow, ", "))
			return echo.ErrMethodNotAllowed
		}
		return echo.ErrNotFound
	}
}

// allowed returns the methods of e's routes whose pattern matches path,
// sorted; HEAD is implied by GET.
func allowed(e *echo.Echo, path string) []string {
	var out []string
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound || slices.Contains(out, r.Method) || !matches(r.Path, path) {
			continue
		}
		out = append(out, r.Method)
	}
	slices.Sort(out)
	return out
}

// matches reports whether an echo route pattern ("/a/:id/b", "/a/*")
// matches path segment by segment.
func matches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	for i, p := range ps {
		if p == "*" {
			return true
		}
		if i >= len(xs) {
			return false
		}
		if strings.HasPrefix(p, ":") {
			if xs[i] == "" {
				return false
			}
			continue
		}
		if p != xs[i] {
			return false
		}
	}
	return len(ps) == len(xs)
}
