// Package httpx holds the server basics every July HTTP API shares: request
// ids, the error envelope and its one central error handler, the body limit,
// panic recovery, and the health endpoints.
//
// Handlers return errors; they never write error bodies themselves. The
// handler built by NewErrorHandler turns every error into the envelope
//
//	{"error":{"code":"STABLE_MACHINE_CODE","message":"中文说明","request_id":"...","retryable":false,"details":[]}}
//
// using, in order: an *Error anywhere in the chain, the registered
// ErrorMappers (one per domain package, added by the app's wiring), the
// framework's own errors, and finally a generic 500 that says nothing
// internal. The package is named httpx so that it does not shadow net/http.
package httpx
