package topup_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/sweep"
	"github.com/july/template/examples/topup"
)

// retentionAt runs apps/relay's idempotency retention once, over the
// tables the domain's relay side registers, with the relay's clock at now.
func (e *env) retentionAt(t *testing.T, now time.Time) int {
	t.Helper()
	clock := ports.ClockFunc(func() time.Time { return now })
	relay, err := topup.Domain().Relay(domain.RelayDeps{DB: e.db, Clock: clock, Logger: e.logger()})
	require.NoError(t, err)
	job, err := sweep.NewIdempotencyRetention(relay.IdempotencyTables, clock, sweep.IdempotencyRetentionConfig{Logger: e.logger()})
	require.NoError(t, err)
	n, err := job.RunOnce(t.Context())
	require.NoError(t, err)
	return n
}

// Idempotency records expire after the retention window (7 days by
// default): the order stays, its key and stored response are cleared, and
// the same request sent again is a new request that creates a new order,
// as docs/openapi.yaml documents. Within the window it still replays.
func TestIdempotencyRecordExpiresAfterRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})

	first := e.create(t, "agent-1", "topup-ttl-0001", createBody)
	require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)
	firstID := decodeOrder(t, first).TopupID

	require.Zero(t, e.retentionAt(t, time.Now().Add(sweep.DefaultIdempotencyRetention-time.Hour)), "rule: a record younger than 7 days is kept")
	again := e.create(t, "agent-1", "topup-ttl-0001", createBody)
	require.Equal(t, "true", again.Header.Get(idemhttp.HeaderReplayed), "rule: within the window the first answer replays")
	require.Equal(t, first.Body, again.Body)

	require.Equal(t, 1, e.retentionAt(t, time.Now().Add(sweep.DefaultIdempotencyRetention+time.Hour)), "rule: a record older than 7 days is cleared")
	require.Equal(t, 1, e.count(t, "ex_topup_order", "id = ? AND amount_cents = 1500 AND idem_request_id IS NULL AND idem_response_body IS NULL", firstID),
		"rule: the order stays; its key and stored response are cleared")

	after := e.create(t, "agent-1", "topup-ttl-0001", createBody)
	require.Equal(t, http.StatusCreated, after.Status, "body %s", after.Body)
	require.Empty(t, after.Header.Get(idemhttp.HeaderReplayed), "rule: after expiry the same request is a new request")
	require.NotEqual(t, firstID, decodeOrder(t, after).TopupID, "rule: a new order")
	require.Equal(t, 2, e.count(t, "ex_topup_order", ""))
	require.Equal(t, 2, e.count(t, "tb_outbox_event", ""), "the new order has its own event")

	// The new record is young again: it replays.
	replay := e.create(t, "agent-1", "topup-ttl-0001", createBody)
	require.Equal(t, "true", replay.Header.Get(idemhttp.HeaderReplayed))
	require.Equal(t, after.Body, replay.Body)
}

func (e *env) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{ReplaceAttr: redaction.ReplaceAttr}))
}
