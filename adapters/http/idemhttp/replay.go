package idemhttp

import (
	"cmp"

	"github.com/labstack/echo/v4"

	"github.com/july/template/core/ports"
)

// HeaderReplayed marks a response replayed from a stored result.
const HeaderReplayed = "Idempotent-Replayed"

// Replay answers c with a stored response: the first request's status,
// Content-Type (application/json when none was stored) and body bytes,
// written verbatim, plus "Idempotent-Replayed: true". The handler calls it
// when pgidem.Insert returns DecisionReplay.
func Replay(c echo.Context, r ports.StoredResponse) error {
	c.Response().Header().Set(HeaderReplayed, "true")
	if len(r.Body) == 0 {
		return c.NoContent(r.Status)
	}
	return c.Blob(r.Status, cmp.Or(r.ContentType, echo.MIMEApplicationJSON), r.Body)
}
