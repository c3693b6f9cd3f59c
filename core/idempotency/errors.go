package idempotency

import "errors"

// Errors callers map to HTTP responses. Each is returned wrapped or as the
// target of a typed error's Is method, so match with errors.Is.
var (
	// ErrKeyMissing is returned by ValidateKey for an empty key. HTTP: 400
	// IDEMPOTENCY_KEY_MISSING.
	ErrKeyMissing = errors.New("idempotency key missing: create commands must carry a request id")
	// ErrKeyMalformed matches every *KeyFormatError. HTTP: 400.
	ErrKeyMalformed = errors.New("idempotency key malformed")
	// ErrScopeInvalid is returned by Scope.Validate. It is a programming or
	// authentication bug, not the client's fault. HTTP: 500.
	ErrScopeInvalid = errors.New("invalid idempotency scope")
	// ErrInvalidInput is returned by the Fingerprinter for input that is not
	// a single, valid UTF-8 JSON value. HTTP: 400.
	ErrInvalidInput = errors.New("invalid fingerprint input")
	// ErrFingerprintMalformed is returned by ParseFingerprint for a string
	// that is not "v<N>:<64 lowercase hex>".
	ErrFingerprintMalformed = errors.New("malformed fingerprint")
	// ErrUnsupportedVersion is returned for a fingerprint version this build
	// cannot compute.
	ErrUnsupportedVersion = errors.New("unsupported fingerprint version")
	// ErrKeyReused means the key was already used in this scope with a
	// different fingerprint; nothing was changed. HTTP: 422
	// IDEMPOTENCY_KEY_REUSED, not retryable.
	ErrKeyReused = errors.New("idempotency key reused with a different request body: use a new key for a new request")
	// ErrInProgress means the first request with this key is still running.
	// HTTP: 409 IDEMPOTENCY_IN_PROGRESS, retryable after a short wait.
	ErrInProgress = errors.New("request with this idempotency key is still in progress: retry later with the same key")
	// ErrAlreadyDone means a conditional update found the row already in the
	// target status: the transition happened before, treat it as success.
	ErrAlreadyDone = errors.New("already in target status")
	// ErrIllegalTransition matches every *IllegalTransitionError.
	ErrIllegalTransition = errors.New("illegal status transition")
	// ErrNotVisible means the row does not exist or the caller may not see
	// it. Both cases give this same answer so existence is never revealed.
	// HTTP: 404.
	ErrNotVisible = errors.New("resource not found")
	// ErrVersionConflict matches every *VersionConflictError. HTTP: 409.
	ErrVersionConflict = errors.New("version conflict")
)
