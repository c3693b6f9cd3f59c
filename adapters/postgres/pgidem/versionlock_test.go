package pgidem_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/idempotency"
)

// newWalletsDB returns a database with wallet 1: balance 100, version 1.
func newWalletsDB(t *testing.T) *bun.DB {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	_, err := db.ExecContext(t.Context(), `CREATE TABLE wallets (id bigint PRIMARY KEY, balance bigint NOT NULL,
		version bigint NOT NULL); INSERT INTO wallets VALUES (1, 100, 1)`)
	require.NoError(t, err)
	return db
}

func wallet(t *testing.T, db *bun.DB) (balance, version int64) {
	t.Helper()
	require.NoError(t, db.NewSelect().Table("wallets").Column("balance", "version").Where("id = 1").Scan(t.Context(), &balance, &version))
	return balance, version
}

func credit(expected, balance int64) pgidem.VersionedParams {
	return pgidem.VersionedParams{Table: "wallets", ID: 1, ExpectedVersion: expected, Set: map[string]any{"balance": balance}}
}

func TestUpdateVersionedOutcomes(t *testing.T) {
	t.Parallel()
	db := newWalletsDB(t)
	ctx := t.Context()

	v, err := pgidem.UpdateVersioned(ctx, db, credit(1, 150))
	require.NoError(t, err)
	require.EqualValues(t, 2, v, "rule: a write at the current version increments it")
	balance, version := wallet(t, db)
	require.EqualValues(t, 150, balance)
	require.EqualValues(t, 2, version)

	_, err = pgidem.UpdateVersioned(ctx, db, credit(1, 999))
	var vce *idempotency.VersionConflictError
	require.ErrorAs(t, err, &vce, "rule: a stale version is a conflict")
	require.Equal(t, idempotency.VersionConflictError{Expected: 1, Actual: 2}, *vce)
	balance, _ = wallet(t, db)
	require.EqualValues(t, 150, balance, "rule: a conflict writes nothing")

	p := credit(2, 0)
	p.ID = 42
	_, err = pgidem.UpdateVersioned(ctx, db, p)
	require.ErrorIs(t, err, idempotency.ErrNotVisible, "rule: a missing row is not visible")

	p = credit(2, 0)
	p.Set = map[string]any{"version": 9}
	_, err = pgidem.UpdateVersioned(ctx, db, p)
	require.Error(t, err, "rule: Set may not write the version column")
	p.Set = map[string]any{"balance; --": 9}
	_, err = pgidem.UpdateVersioned(ctx, db, p)
	require.ErrorIs(t, err, pgidem.ErrBadIdentifier)
}

func TestUpdateVersionedExpression(t *testing.T) {
	t.Parallel()
	db := newWalletsDB(t)
	p := credit(1, 0)
	p.Set = map[string]any{"balance": bun.SafeQuery("balance + ?", 7)}
	_, err := pgidem.UpdateVersioned(t.Context(), db, p)
	require.NoError(t, err)
	balance, _ := wallet(t, db)
	require.EqualValues(t, 107, balance)
}

// The version predicate decides concurrent writers: of ten holding the
// same expected version, exactly one writes and nine get a conflict.
func TestUpdateVersionedConcurrentWritersOneWins(t *testing.T) {
	t.Parallel()
	db := newWalletsDB(t)

	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = pgidem.UpdateVersioned(context.WithoutCancel(t.Context()), db, credit(1, 100+int64(i)+1))
		})
	}
	close(start)
	wg.Wait()

	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, idempotency.ErrVersionConflict):
			require.NoError(t, err)
		}
	}
	require.Equal(t, 1, won, "errors %v", errs)
	_, version := wallet(t, db)
	require.EqualValues(t, 2, version, "rule: one increment")
}
