package apiserver

import (
	"github.com/labstack/echo/v4"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
)

// Module provides *Server, its *echo.Echo and its API group as
// `name:"api_v1"` *echo.Group. It needs Params from the app and adds the
// `group:"error_mappers"` httpx.ErrorMappers and `group:"access_routes"`
// accesslog.Routes that domain modules contribute to Params'.
var Module = fx.Module("apiserver",
	fx.Provide(
		fx.Annotate(newFromGroups, fx.ParamTags(``, `group:"error_mappers"`, `group:"access_routes"`)),
		func(s *Server) *echo.Echo { return s.Echo },
		fx.Annotate(func(s *Server) *echo.Group { return s.API }, fx.ResultTags(`name:"api_v1"`)),
	),
)

func newFromGroups(p Params, mappers []httpx.ErrorMapper, routes []accesslog.Route) (*Server, error) {
	p.Mappers = append(append([]httpx.ErrorMapper(nil), p.Mappers...), mappers...)
	p.Routes = append(append([]accesslog.Route(nil), p.Routes...), routes...)
	return New(p)
}
