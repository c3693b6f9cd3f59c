package ports

import "github.com/july/template/core/idempotency"

// IdempotencyKey identifies one idempotent create command: the caller's
// request id within a scope, plus the fingerprint of what was asked. The
// HTTP layer builds it (after validating the key format) and the store
// adapter records it next to the business row it creates.
type IdempotencyKey struct {
	// Scope is the principal and operation the request id is unique in.
	Scope idempotency.Scope
	// RequestID is the caller's key (X-Request-ID or Idempotency-Key),
	// already checked by idempotency.ValidateKey.
	RequestID string
	// Fingerprint is the versioned digest of the request's content.
	Fingerprint idempotency.Fingerprint
}

// StoredResponse is the outcome of a completed idempotent command, stored in
// the same transaction as the business fact so every retry replays it.
type StoredResponse struct {
	// ResultRef points at what the command created (e.g. the order id).
	ResultRef string
	// Status is the HTTP status the first request answered with.
	Status int
	// Body is the exact bytes the first request answered with; nil for none.
	// A replay writes them verbatim, so keep them byte for byte.
	Body []byte
	// ContentType is the first response's Content-Type; "" means
	// application/json.
	ContentType string
}
