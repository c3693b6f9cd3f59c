package topup_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
	"github.com/july/template/examples/topup"
)

// The use cases run without HTTP: a CLI, a consumer or this test calls
// Service the way the handlers do, against a real Postgres. The create
// commits the order, its event and its stored answer together; a retry
// with the same key gets that answer back; reads see only the actor's own
// orders.
func TestServiceRunsWithoutHTTP(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(topup.MigrationsFS)}).Bun
	links, err := topup.NewPayLinks(topup.DefaultPayBaseURL, []byte("pay-link-test-key-0123456789abcdef"))
	require.NoError(t, err)
	svc, err := topup.NewService(topup.ServiceConfig{DB: db, PayLinks: links})
	require.NoError(t, err)

	agent := topup.Actor{Subject: "agent-cli", Roles: []string{topup.RoleAgent}}
	req := topup.CreateRequest{AmountCents: 2500, Channel: topup.ChannelAlipay}
	cmd := topup.CreateCommand{Key: createKey(t, agent.Subject, "cli-req-0001", req), Request: req, RequestID: "cli-req-0001"}

	first, err := svc.Create(t.Context(), agent, cmd)
	require.NoError(t, err)
	require.Nil(t, first.Replay)
	o := first.Order
	require.NotEmpty(t, o.TopupID)
	require.Equal(t, agent.Subject, o.AgentID, "the order belongs to the actor")
	require.EqualValues(t, 2500, o.AmountCents)
	var body topup.OrderView
	require.NoError(t, json.Unmarshal(first.Body, &body))
	require.Equal(t, o, body, "Body is the order's JSON")

	var ev struct {
		RequestID     string `bun:"request_id"`
		CorrelationID string `bun:"correlation_id"`
	}
	require.NoError(t, db.NewSelect().TableExpr("tb_outbox_event").Column("request_id", "correlation_id").
		Where("aggregate_id = ?", o.TopupID).Scan(t.Context(), &ev))
	require.Equal(t, "cli-req-0001", ev.RequestID, "the event carries the command's request id")
	require.Equal(t, o.TopupID, ev.CorrelationID, "the order is the event's chain")

	again, err := svc.Create(t.Context(), agent, cmd)
	require.NoError(t, err)
	require.NotNil(t, again.Replay, "rule: a retry with the same key replays")
	require.Equal(t, http.StatusCreated, again.Replay.Status)
	require.Equal(t, string(first.Body), string(again.Replay.Body), "rule: the replay is the first answer, byte for byte")
	other := topup.CreateRequest{AmountCents: 2600, Channel: topup.ChannelAlipay}
	_, err = svc.Create(t.Context(), agent, topup.CreateCommand{Key: createKey(t, agent.Subject, "cli-req-0001", other), Request: other})
	require.ErrorIs(t, err, idempotency.ErrKeyReused, "rule: the same key with another request is refused")
	n, err := db.NewSelect().TableExpr("ex_topup_order").Count(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "rule: a replay and a reused key write nothing")

	got, err := svc.Order(t.Context(), agent, o.TopupID)
	require.NoError(t, err)
	require.Equal(t, o, got)
	_, err = svc.Order(t.Context(), topup.Actor{Subject: "agent-other", Roles: []string{topup.RoleAgent}}, o.TopupID)
	require.ErrorIs(t, err, topup.ErrNotFound, "rule: another agent's order is not found")
	got, err = svc.Order(t.Context(), topup.Actor{Subject: "ops-cli", Roles: []string{topup.RoleAdmin}}, o.TopupID)
	require.NoError(t, err, "rule: an admin reads any order")
	require.Equal(t, o, got)
	noRole := topup.Actor{Subject: agent.Subject}
	_, err = svc.Order(t.Context(), noRole, o.TopupID)
	require.ErrorIs(t, err, topup.ErrForbidden, "rule: without a role, not even the own order")
	_, err = svc.Wallet(t.Context(), noRole)
	require.ErrorIs(t, err, topup.ErrForbidden)
	_, err = svc.Create(t.Context(), noRole, topup.CreateCommand{Key: createKey(t, agent.Subject, "cli-req-0002", req), Request: req})
	require.ErrorIs(t, err, topup.ErrForbidden)

	w, err := svc.Wallet(t.Context(), agent)
	require.NoError(t, err)
	require.Equal(t, topup.WalletView{AgentID: agent.Subject, LedgerEntries: []topup.LedgerEntryView{}}, w, "zero wallet before the credit")

	_, err = svc.Create(t.Context(), topup.Actor{}, cmd)
	require.Error(t, err, "a use case needs its actor")
}

// createKey is the idempotency key idemhttp would build for req.
func createKey(t *testing.T, principal, requestID string, req topup.CreateRequest) ports.IdempotencyKey {
	t.Helper()
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	require.NoError(t, err)
	sum, err := fp.FromValue(req)
	require.NoError(t, err)
	return ports.IdempotencyKey{
		Scope:     idempotency.Scope{Principal: principal, Operation: topup.OperationCreate},
		RequestID: requestID, Fingerprint: sum,
	}
}
