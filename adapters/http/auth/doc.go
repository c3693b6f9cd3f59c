// Package auth authenticates HTTP callers and guards routes by role.
//
// Authenticator is the port; JWT is the default adapter (HS256 bearer
// tokens with "sub" and "roles" claims). Middleware and RequireRole decide
// 401 and 403 before a handler runs, so neither answer can reveal whether
// the addressed resource exists.
package auth
