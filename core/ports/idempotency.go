package ports

import (
	"context"
	"time"

	"github.com/july/template/core/idempotency"
)

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
	// Refingerprint, when set, recomputes the request's fingerprint with
	// another version; stores compare a record with
	// idempotency.InVersion(record's version, Fingerprint, Refingerprint).
	// Nil: Fingerprint equals no record of another version.
	Refingerprint idempotency.RefingerprintFunc
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

// IdempotencyTable registers one business table that carries idempotency
// records with the relay's retention job (core/sweep.IdempotencyRetention).
type IdempotencyTable struct {
	// Name labels the table in logs and metrics (e.g. "topup.order");
	// unique among the registered tables, at most 64 bytes.
	Name string
	// Records clears the table's expired records.
	Records IdempotencyExpirer
}

// IdempotencyExpirer clears expired idempotency records on ONE business
// table, whose rows carry the record next to the business fact.
type IdempotencyExpirer interface {
	// ExpireRecords clears the idempotency record (scope, key, fingerprint
	// and stored response) of up to limit rows whose record was saved at or
	// before savedBefore, oldest first, and returns how many it cleared.
	// The business row itself stays unchanged. Once cleared, the key is
	// free: a request carrying it again is a new request. Rows without a
	// record are never counted; concurrent calls never clear a row twice;
	// limit must be at least 1. When the database cannot be reached it
	// returns an error wrapping ErrUnavailable and changes nothing.
	ExpireRecords(ctx context.Context, savedBefore time.Time, limit int) (int, error)
}
