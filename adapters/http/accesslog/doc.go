// Package accesslog writes one redacted JSON line per HTTP request.
//
// The line keeps what an operator needs to find a request (request id,
// method, route and path, redacted query, status, latency, client IP, user
// agent, user id) and describes both bodies through core/redaction under the
// route's Policy: redacted JSON or form text, or a Summary of names, sizes
// and a keyed hash. Bodies are redacted first and then cut at the
// Redactor's MaxBytes (50 KiB by default), with a truncated flag.
//
// Bodies are observed as they stream, never re-read: the request body is
// copied while the handler reads it and the response while the handler
// writes it, each only up to Config.CaptureBytes and only for content types
// that can be logged as text. Multipart and binary bodies are counted, never
// buffered, so uploads, downloads and flushing streams keep working.
package accesslog
