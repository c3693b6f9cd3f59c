package confighttp

import (
	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/core/redaction"
)

// apiPrefix is where the app mounts the group Register is given.
const apiPrefix = "/api/v1"

// AccessRoutes are the access-log policies of the routes. The list logs
// under PolicyConfig, so its "key" members (config key names) stay
// readable; values are masked by the registry already. A single key's
// route is opaque (size and keyed hash only): a PUT body holds the new
// value under "value", which no key-name rule recognises as sensitive, and
// the key may be a secret.
func AccessRoutes() []accesslog.Route {
	return []accesslog.Route{
		{Path: apiPrefix + RouteList, RoutePolicy: accesslog.RoutePolicy{Policy: redaction.PolicyConfig}},
		{Path: apiPrefix + RouteKey, RoutePolicy: accesslog.RoutePolicy{Policy: redaction.PolicyOpaque}},
	}
}
