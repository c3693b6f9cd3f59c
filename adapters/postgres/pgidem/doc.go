// Package pgidem holds the concurrency-safe writes business code runs in its
// own transaction on its own tables: Insert and SaveResponse reserve an
// idempotency key on the created row (Record, ColumnsSQL) and store the
// response a retry replays; Transition moves a row's status with a
// conditional update; UpdateVersioned writes under an optimistic version
// lock. Each decides with one statement (a unique constraint or a WHERE
// clause), never check-then-write, and answers in core/idempotency's terms.
package pgidem
