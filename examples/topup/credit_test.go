package topup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/examples/topup"
)

// END TO END: HTTP create, the relay publishes, the worker credits once;
// then the same envelope is delivered again under another task id (asynq's
// dedup cannot absorb it) and nothing changes.
func TestEndToEndCreditsOnceDespiteDuplicateDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	w := e.startRelay(t)

	o := decodeOrder(t, e.create(t, "agent-1", "topup-req-0400", createBody))
	env := e.envelopeOf(t, o.TopupID)
	require.Equal(t, "topup-req-0400", env.RequestID)
	require.Equal(t, o.TopupID, env.CorrelationID)

	require.Eventually(t, func() bool { return e.orderStatus(t, o.TopupID) == topup.StatusCredited },
		waitLong, tick, "order %s never credited; logs:\n%s", o.TopupID, e.logs.String())
	w.requireCompleted(t, env.EventID)
	wallet := e.walletRow(t, "agent-1")
	require.EqualValues(t, 1500, wallet.BalanceCents)
	require.EqualValues(t, 1, wallet.Version)
	require.Equal(t, 1, e.count(t, "ex_topup_ledger", "order_id = ?", o.TopupID))

	// The consumer's log line carries the chain's ids.
	credited := e.logs.Records(t, "topup credited")
	require.Len(t, credited, 1, "logs:\n%s", e.logs.String())
	require.Equal(t, env.RequestID, credited[0]["request_id"])
	require.Equal(t, env.CorrelationID, credited[0]["correlation_id"])
	require.Equal(t, env.EventID, credited[0]["event_id"])

	// DUPLICATE DELIVERY: same envelope, a task id asynq has not seen.
	b, err := json.Marshal(env)
	require.NoError(t, err)
	dupID := env.EventID + "-dup"
	_, err = w.client.Enqueue(asynq.NewTask(topup.EventCreated, b), asynq.Queue(w.queue), asynq.TaskID(dupID), asynq.Retention(time.Hour))
	require.NoError(t, err)
	w.requireCompleted(t, dupID)

	require.Equal(t, wallet, e.walletRow(t, "agent-1"), "rule: a duplicate delivery changes nothing")
	require.Equal(t, 1, e.count(t, "ex_topup_ledger", ""))
	require.Len(t, e.logs.Records(t, "topup already credited; duplicate delivery ignored"), 1)

	view := decodeWallet(t, e.do(t, req{method: http.MethodGet, path: "/api/v1/wallets/me", agent: "agent-1"}))
	require.Equal(t, "agent-1", view.AgentID)
	require.EqualValues(t, 1500, view.BalanceCents)
	require.EqualValues(t, 1, view.Version)
	require.Len(t, view.LedgerEntries, 1)
	require.Equal(t, o.TopupID, view.LedgerEntries[0].OrderID)
	require.EqualValues(t, 1500, view.LedgerEntries[0].AmountCents)

	got := decodeOrder(t, e.do(t, req{method: http.MethodGet, path: "/api/v1/topups/" + o.TopupID, agent: "agent-1"}))
	require.Equal(t, "credited", got.Status)
}

// Ten concurrent deliveries of one envelope straight into the consumer's
// handler (the asynq.Handler the worker runs): one credit.
func TestConcurrentDuplicateDeliveriesCreditOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	o := decodeOrder(t, e.create(t, "agent-1", "topup-req-0500", createBody))
	b, err := json.Marshal(e.envelopeOf(t, o.TopupID))
	require.NoError(t, err)
	h := e.cred.Consumer().Handler

	deliver := func(n int) {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = h.ProcessTask(context.Background(), asynq.NewTask(topup.EventCreated, b)) })
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "delivery %d", i)
		}
	}
	deliver(10)
	wallet := e.walletRow(t, "agent-1")
	require.EqualValues(t, 1500, wallet.BalanceCents)
	require.EqualValues(t, 1, wallet.Version)
	require.Equal(t, 1, e.count(t, "ex_topup_ledger", ""))
	require.Equal(t, topup.StatusCredited, e.orderStatus(t, o.TopupID))

	deliver(2)
	require.Equal(t, wallet, e.walletRow(t, "agent-1"), "rule: later deliveries change nothing")
	require.Equal(t, 1, e.count(t, "ex_topup_ledger", ""))
}

// Credits of different orders of one agent race on the wallet's version
// lock; every one lands, none twice.
func TestConcurrentCreditsOfOneAgentAllLand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	const n = 8
	envs := make([]outbox.Envelope, n)
	var want int64
	for i := range n {
		amount := int64(100 * (i + 1))
		want += amount
		r := e.create(t, "agent-1", fmt.Sprintf("topup-req-06%02d", i), fmt.Sprintf(`{"amount_cents":%d,"channel":"alipay"}`, amount))
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Body)
		envs[i] = e.envelopeOf(t, decodeOrder(t, r).TopupID)
	}
	// Each credit re-reads the wallet a few times inside its transaction;
	// one that still loses to the others returns the version conflict and
	// the queue runs it again, as here. Every round lands at least one
	// credit (someone wins each conflict), so the rounds are bounded by
	// progress, not by how fast the machine is.
	pending := envs
	for round := 1; len(pending) > 0; round++ {
		errs := make([]error, len(pending))
		var wg sync.WaitGroup
		for i := range pending {
			wg.Go(func() { errs[i] = credit(t, e, pending[i]) })
		}
		wg.Wait()
		var again []outbox.Envelope
		for i, err := range errs {
			if err != nil {
				var conflict *idempotency.VersionConflictError
				require.ErrorAs(t, err, &conflict, "round %d, credit %d: only a version conflict may send a credit back to the queue", round, i)
				again = append(again, pending[i])
			}
		}
		require.Less(t, len(again), len(pending), "round %d: no credit landed", round)
		pending = again
	}
	wallet := e.walletRow(t, "agent-1")
	require.Equal(t, want, wallet.BalanceCents)
	require.EqualValues(t, n, wallet.Version, "one versioned write per credit")
	require.Equal(t, n, e.count(t, "ex_topup_ledger", ""))
	require.Equal(t, n, e.count(t, "ex_topup_order", "status = ?", topup.StatusCredited))
}

// The version-lock conflict path, forced: another writer bumps the wallet
// between the consumer's read and its versioned update. The consumer sees
// the conflict, re-reads and lands its credit on top.
func TestCreditRetriesOnVersionConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	first := decodeOrder(t, e.create(t, "agent-1", "topup-req-0700", createBody))
	require.NoError(t, credit(t, e, e.envelopeOf(t, first.TopupID)))
	second := decodeOrder(t, e.create(t, "agent-1", "topup-req-0701", `{"amount_cents":200,"channel":"alipay"}`))
	env := e.envelopeOf(t, second.TopupID)

	// A concurrent writer holds the row with version 1 -> 2 uncommitted.
	tx, err := e.db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	_, err = tx.NewUpdate().Table("ex_topup_wallet").Set("balance_cents = balance_cents + 7").
		Set("version = version + 1").Where("agent_id = ?", "agent-1").Exec(t.Context())
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { done <- credit(t, e, env) }()
	require.Eventually(t, func() bool { return lockWaiters(t, e.db) > 0 }, waitLong, tick,
		"the consumer never waited on the wallet row")
	require.NoError(t, tx.Commit())
	require.NoError(t, <-done)

	wallet := e.walletRow(t, "agent-1")
	require.EqualValues(t, 1500+7+200, wallet.BalanceCents, "rule: neither write is lost")
	require.EqualValues(t, 3, wallet.Version)
	require.Len(t, e.logs.Records(t, "topup wallet version conflict; re-reading"), 1, "logs:\n%s", e.logs.String())
	require.Equal(t, topup.StatusCredited, e.orderStatus(t, second.TopupID))
}

func TestCreditRefusesEventNotMatchingOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	o := decodeOrder(t, e.create(t, "agent-1", "topup-req-0800", createBody))
	env := e.envelopeOf(t, o.TopupID)
	tests := []struct {
		name    string
		payload topup.Created
	}{
		{"other amount", topup.Created{TopupID: o.TopupID, AgentID: "agent-1", AmountCents: 1}},
		{"other agent", topup.Created{TopupID: o.TopupID, AgentID: "agent-2", AmountCents: 1500}},
		{"no such order", topup.Created{TopupID: "missing", AgentID: "agent-1", AmountCents: 1500}},
	}
	for _, tt := range tests {
		err := e.cred.Credit(t.Context(), env, tt.payload)
		require.Error(t, err, "case %s", tt.name)
		require.Equal(t, outbox.ClassPermanent, outbox.Classify(err), "case %s: %v", tt.name, err)
	}
	require.Zero(t, e.count(t, "ex_topup_ledger", ""))
	require.Zero(t, e.count(t, "ex_topup_wallet", ""))
	require.Equal(t, topup.StatusCreated, e.orderStatus(t, o.TopupID))
}

// credit runs the consumer on env as the worker would.
func credit(t *testing.T, e *env, env outbox.Envelope) error {
	t.Helper()
	var p topup.Created
	if err := env.Decode(&p); err != nil {
		return err
	}
	return e.cred.Credit(context.Background(), env, p)
}

// lockWaiters counts sessions of the test database waiting on a lock.
func lockWaiters(t *testing.T, db *bun.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.NewRaw(`SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(t.Context(), &n))
	return n
}
