// Package redaction turns request and response data into text that is safe
// to write to an access log.
//
// It is pure: it takes bytes and small values and returns strings and
// summaries; it does no I/O and reads no clock. The HTTP layer captures the
// bodies (at most MaxBytes of them), picks the route's Policy and logs what
// Redactor.Summarise returns.
//
// Three rules hold everywhere:
//
//   - A sensitive value is replaced whole by the constant "[REDACTED]",
//     whatever its JSON type. Nothing is partly masked.
//   - Redaction happens before truncation, so a cut can never expose the tail
//     of a value that redaction would have removed.
//   - Anything that cannot be parsed on a route that allows body logging is
//     logged as a Summary (names, sizes, keyed hash), never as raw text.
//
// Keys are matched by a Registry that ignores case and the separators
// '-', '_', '.' and ' ', so apiKey, api_key, API-KEY and x.api.key are one key.
package redaction
