package pgoutbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// TestAsynchronousCommit: with Config.AsynchronousCommit every write of
// the lease holder, and RecordConsumed, turns synchronous_commit off for
// its own transaction (no session setting: a pooler in transaction mode
// lends the session on), and does what it does without it; other
// statements, and a store without it, leave it on.
func TestAsynchronousCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	for range 5 {
		require.NoError(t, pgoutbox.Append(ctx, db, newOutboxEvent(t)))
	}
	mode := func(tx bun.Tx) string {
		var m string
		require.NoError(t, tx.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&m))
		return m
	}
	// inTx runs op through a store on one transaction and returns the
	// setting after it; the transaction commits.
	inTx := func(async bool, op func(s *pgoutbox.Store) error) string {
		var m string
		require.NoError(t, db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			// The server's own default may be off (the containers' stand-in
			// runs so): start each transaction from "on" so the test sees
			// what the store does, not what the server says.
			_, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = on")
			require.NoError(t, err)
			s, err := pgoutbox.NewStore(tx, pgoutbox.Config{AsynchronousCommit: async})
			require.NoError(t, err)
			require.NoError(t, op(s))
			m = mode(tx)
			return nil
		}))
		return m
	}
	now := outboxT0.Add(time.Second)
	var evs []outbox.Event
	require.Equal(t, "on", inTx(false, func(s *pgoutbox.Store) error {
		var err error
		evs, err = s.Claim(ctx, ports.ClaimParams{Owner: "r", Now: now, LeaseFor: time.Minute, Limit: 1})
		return err
	}), "rule: a store without it commits synchronously")
	require.Len(t, evs, 1)
	ref := func(e outbox.Event) ports.LeaseRef { return ports.LeaseRef{ID: e.ID, Token: e.Lease.Token} }

	ops := map[string]func(s *pgoutbox.Store) error{
		"claim": func(s *pgoutbox.Store) error {
			more, err := s.Claim(ctx, ports.ClaimParams{Owner: "r", Now: now, LeaseFor: time.Minute, Limit: 4})
			require.Len(t, more, 4)
			evs = append(evs, more...)
			return err
		},
		"renew": func(s *pgoutbox.Store) error {
			lost, err := s.Renew(ctx, "r", now, 2*time.Minute, []ports.LeaseRef{ref(evs[0])})
			require.Empty(t, lost)
			return err
		},
		"complete": func(s *pgoutbox.Store) error {
			lost, err := s.Complete(ctx, "r", now, []ports.LeaseRef{ref(evs[0])})
			require.Empty(t, lost)
			return err
		},
		"fail": func(s *pgoutbox.Store) error {
			lost, err := s.Fail(ctx, "r", now, []ports.FailItem{{Ref: ref(evs[1]), Decision: outbox.FailureDecision{
				Status: outbox.Pending, NextAttemptAt: now, RetryCount: 1, Code: "X", Class: outbox.ClassTransient}}})
			require.Empty(t, lost)
			return err
		},
		"release": func(s *pgoutbox.Store) error {
			lost, err := s.Release(ctx, "r", now, []ports.LeaseRef{ref(evs[2])})
			require.Empty(t, lost)
			return err
		},
		"recover": func(s *pgoutbox.Store) error {
			res, err := s.RecoverExpired(ctx, ports.RecoverParams{Now: now.Add(time.Hour), Limit: 10, Policy: outbox.Policy{MaxAttempts: 5}})
			require.Equal(t, 2, res.Requeued)
			return err
		},
		"record consumed": func(s *pgoutbox.Store) error {
			return s.RecordConsumed(ctx, []ports.Consumption{{EventID: evs[0].EventID, Consumer: "c", At: now}})
		},
	}
	for _, name := range []string{"claim", "renew", "complete", "fail", "release", "recover", "record consumed"} {
		require.Equal(t, "off", inTx(true, ops[name]), "rule: %s commits asynchronously", name)
	}
	require.Equal(t, "on", inTx(true, func(s *pgoutbox.Store) error {
		_, err := s.Get(ctx, evs[0].EventID)
		return err
	}), "rule: only the relay's writes")
	var consumed int
	require.NoError(t, db.NewRaw("SELECT count(*) FROM tb_outbox_consumption").Scan(ctx, &consumed))
	require.Equal(t, 1, consumed)
}
