// Package wakemark is the per-transaction mark shared by the post-commit
// wake-up (adapters/postgres, wake.go) and pgoutbox.Append: a pool from
// postgres.Open marks each transaction it begins in the transaction's
// context; Append, seeing an open mark, turns the insert trigger's
// in-transaction NOTIFY off for that transaction only, because the pool
// wakes the relay itself once the transaction committed.
package wakemark

import (
	"context"
	"sync/atomic"
)

// States of a Tx.
const (
	Open     int32 = iota // no outbox write yet
	Appended              // wrote to the outbox; wake on commit
	Ended                 // committed or rolled back
)

// Tx is one transaction's mark.
type Tx struct{ State atomic.Int32 }

type key struct{}

// With returns ctx carrying a fresh mark, and the mark.
func With(ctx context.Context) (context.Context, *Tx) {
	tx := &Tx{}
	return context.WithValue(ctx, key{}, tx), tx
}

// From returns ctx's mark, or nil.
func From(ctx context.Context) *Tx {
	tx, _ := ctx.Value(key{}).(*Tx)
	return tx
}

// WakesAfterCommit reports whether ctx is the context of a transaction, not
// yet over, that a waking pool began: its commit wakes the relay.
func WakesAfterCommit(ctx context.Context) bool {
	tx := From(ctx)
	return tx != nil && tx.State.Load() != Ended
}
