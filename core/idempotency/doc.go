// Package idempotency holds the pure rules behind idempotent commands and
// safe retries (docs/architecture.md, "Idempotency record and decisions").
// It does no I/O: adapters read and write the
// rows, and call these functions to decide what a duplicate means.
//
// Four primitives live here, each with its own job; none replaces another:
//
//   - Scope and key: an idempotent create command is identified by the
//     caller's request id (ValidateKey, KeyFormat) within a Scope of
//     principal and operation.
//   - Fingerprint: a versioned hash of the request's business content
//     (Fingerprinter), so a reused key with different content is detected.
//   - Decide: what to do when a record for scope+key already exists
//     (replay, conflict, wait, take over).
//   - ResolveNoRow and CheckVersion: what a conditional UPDATE or an
//     optimistic-lock UPDATE that touched no row means.
//
// PostgreSQL unique constraints remain the final arbiter of concurrent first
// writes; these rules only turn the stored facts into a stable answer.
package idempotency
