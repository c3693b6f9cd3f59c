package apiserver

import (
	"github.com/labstack/echo/v4"
	"go.uber.org/fx"
)

// Module provides *Server and its *echo.Echo. It needs Params from the
// app, which carry the domains' access-log policies and error mappers; a
// domain's handlers go on the Server's API group.
var Module = fx.Module("apiserver",
	fx.Provide(
		New,
		func(s *Server) *echo.Echo { return s.Echo },
	),
)
