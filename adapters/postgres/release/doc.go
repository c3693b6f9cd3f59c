// Package release is the migration release step behind apps/migrate: status,
// pre-flight Check, Up under an advisory lock, post-flight Verify, a
// data-safe Down, and resumable Backfills.
//
// Every check reports counts and safe identifiers (table, column, constraint,
// index and migration names), never row values. Check and Status never
// write; Check runs in a READ ONLY transaction.
package release
