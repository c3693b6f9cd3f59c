// Package apiserver assembles the API's echo server: request ids, the
// redacting access log, recovery, the body limit, the one error handler,
// the client's idempotency key captured before the request id is
// normalised, the probes and /api/v1 behind bearer auth on the public
// port, and the probes and /metrics on a separate admin port.
//
// apps/api serves it through Module, and every HTTP test harness builds it
// with New, so tests run behind the middleware stack production runs.
// Domains add their routes to Server.API and pass their access-log
// policies and error mappers in Params.
package apiserver
