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

// Job statuses for the tests: 1 pending, 2 running, 3 done.
const (
	jobPending int16 = 1
	jobRunning int16 = 2
	jobDone    int16 = 3
)

func jobAllowed(from, to int16) bool {
	return (from == jobPending && to == jobRunning) || (from == jobRunning && to == jobDone)
}

// newJobsDB returns a database with jobs 1 (pending, tenant a), 2 (done,
// tenant a) and 3 (pending, tenant b).
func newJobsDB(t *testing.T) *bun.DB {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	_, err := db.ExecContext(t.Context(), `CREATE TABLE jobs (id bigint PRIMARY KEY, tenant text NOT NULL,
		status smallint NOT NULL, note text);
		INSERT INTO jobs VALUES (1, 'a', 1, NULL), (2, 'a', 3, NULL), (3, 'b', 1, NULL)`)
	require.NoError(t, err)
	return db
}

func jobStatus(t *testing.T, db *bun.DB, id int64) (status int16, note *string) {
	t.Helper()
	require.NoError(t, db.NewSelect().Table("jobs").Column("status", "note").Where("id = ?", id).Scan(t.Context(), &status, &note))
	return status, note
}

func moveJob(id int64, from, to int16) pgidem.TransitionParams {
	return pgidem.TransitionParams{Table: "jobs", ID: id, From: from, To: to, Allowed: jobAllowed,
		VisibleWhere: "tenant = ?", VisibleArgs: []any{"a"}}
}

func TestTransitionOutcomes(t *testing.T) {
	t.Parallel()
	db := newJobsDB(t)
	ctx := t.Context()

	p := moveJob(1, jobPending, jobRunning)
	p.Set = map[string]any{"note": "started"}
	require.NoError(t, pgidem.Transition(ctx, db, p), "rule: a matching row moves")
	status, note := jobStatus(t, db, 1)
	require.Equal(t, jobRunning, status)
	require.Equal(t, "started", *note, "rule: Set columns are written with the move")

	err := pgidem.Transition(ctx, db, moveJob(1, jobPending, jobRunning))
	require.ErrorIs(t, err, idempotency.ErrAlreadyDone, "rule: a repeated move is already done")

	err = pgidem.Transition(ctx, db, moveJob(2, jobPending, jobRunning))
	var ite *idempotency.IllegalTransitionError
	require.ErrorAs(t, err, &ite, "rule: a row in another status is an illegal transition")
	require.Equal(t, idempotency.IllegalTransitionError{Expected: jobPending, Current: jobDone, Target: jobRunning, Stale: false}, *ite)

	missing := pgidem.Transition(ctx, db, moveJob(99, jobPending, jobRunning))
	hidden := pgidem.Transition(ctx, db, moveJob(3, jobPending, jobRunning))
	require.ErrorIs(t, missing, idempotency.ErrNotVisible, "rule: a missing row is not visible")
	require.ErrorIs(t, hidden, idempotency.ErrNotVisible, "rule: a row outside the visibility predicate is not visible")
	require.Equal(t, missing.Error(), hidden.Error(), "rule: missing and hidden rows answer alike")
	status, _ = jobStatus(t, db, 3)
	require.Equal(t, jobPending, status, "rule: a hidden row is not changed")
}

func TestTransitionStaleReadIsMarkedStale(t *testing.T) {
	t.Parallel()
	db := newJobsDB(t)
	require.NoError(t, pgidem.Transition(t.Context(), db, moveJob(1, jobPending, jobRunning)))

	// The caller read "pending" and wants "done"; the row is now running,
	// from where done is allowed: a stale read, not a forbidden move.
	err := pgidem.Transition(t.Context(), db, moveJob(1, jobPending, jobDone))
	var ite *idempotency.IllegalTransitionError
	require.ErrorAs(t, err, &ite)
	require.True(t, ite.Stale, "error %v", err)
}

func TestTransitionRejectsBadIdentifiers(t *testing.T) {
	t.Parallel()
	db := newJobsDB(t)

	tests := []struct {
		name string
		p    pgidem.TransitionParams
	}{
		{"table", pgidem.TransitionParams{Table: "jobs; DROP TABLE jobs", ID: 1, From: 1, To: 2}},
		{"status column", pgidem.TransitionParams{Table: "jobs", StatusColumn: `status"`, ID: 1, From: 1, To: 2}},
		{"set column", pgidem.TransitionParams{Table: "jobs", ID: 1, From: 1, To: 2, Set: map[string]any{"note = 'x', status": 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := pgidem.Transition(t.Context(), db, tt.p)
			require.ErrorIs(t, err, pgidem.ErrBadIdentifier, "params %+v", tt.p)
		})
	}
	status, _ := jobStatus(t, db, 1)
	require.Equal(t, jobPending, status)
}

// The conditional update decides a race: of two movers from the same
// status, one wins and the other learns the move is already done.
func TestTransitionConcurrentMoversOneWins(t *testing.T) {
	t.Parallel()
	db := newJobsDB(t)

	const n = 2
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = pgidem.Transition(context.WithoutCancel(t.Context()), db, moveJob(1, jobPending, jobRunning))
		})
	}
	close(start)
	wg.Wait()

	won, done := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, idempotency.ErrAlreadyDone):
			done++
		default:
			require.NoError(t, err)
		}
	}
	require.Equal(t, 1, won, "errors %v", errs)
	require.Equal(t, 1, done, "errors %v", errs)
}
