package testdomain

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// Create stores the order, its event and its answer once per key; a retry
// replays, another body under the key is refused, a caller without the
// role writes nothing; the consumer applies each order once, however often
// its event arrives.
func TestCreateReplayApply(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(MigrationsFS)}).Bun
	svc, err := NewService(db, nil, nil)
	require.NoError(t, err)
	writer := Actor{Subject: "td-owner", Roles: []string{RoleWriter}}
	cmd := func(key string, amount int64) CreateCommand {
		fp, err := idempotency.FromCommand(CreateRequest{Amount: amount})
		require.NoError(t, err)
		return CreateCommand{Request: CreateRequest{Amount: amount}, Key: ports.IdempotencyKey{
			Scope: idempotency.Scope{Principal: writer.Subject, Operation: OperationCreate}, RequestID: key, Fingerprint: fp}}
	}
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, db.NewRaw("SELECT count(*) FROM "+q, args...).Scan(ctx, &n))
		return n
	}

	_, err = svc.Create(ctx, Actor{Subject: "td-reader"}, cmd("td-key-0", 5))
	require.ErrorIs(t, err, ErrForbidden)
	require.Zero(t, count("td_order"), "a refused create writes nothing")

	first, err := svc.Create(ctx, writer, cmd("td-key-1", 5))
	require.NoError(t, err)
	require.Nil(t, first.Replay)
	require.Equal(t, "created", first.Order.Status)
	again, err := svc.Create(ctx, writer, cmd("td-key-1", 5))
	require.NoError(t, err)
	require.NotNil(t, again.Replay, "the same key and command replay")
	require.Equal(t, first.Body, again.Replay.Body)
	_, err = svc.Create(ctx, writer, cmd("td-key-1", 6))
	require.ErrorIs(t, err, idempotency.ErrKeyReused)
	require.Equal(t, 1, count("td_order"))
	require.Equal(t, 1, count("tb_outbox_event WHERE event_type = ? AND aggregate_id = ?", EventCreated, first.Order.OrderID))

	var eventID string
	require.NoError(t, db.NewRaw("SELECT event_id::text FROM tb_outbox_event WHERE aggregate_id = ?", first.Order.OrderID).Scan(ctx, &eventID))
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)
	ev, err := store.Get(ctx, eventID)
	require.NoError(t, err)
	payload, err := json.Marshal(ev.Envelope())
	require.NoError(t, err)
	a, err := NewApplier(db, nil)
	require.NoError(t, err)
	for range 3 { // duplicate deliveries
		require.NoError(t, a.Consumer().Handler.ProcessTask(ctx, asynq.NewTask(EventCreated, payload)))
	}
	require.Equal(t, 1, count("td_effect WHERE order_id = ? AND event_id = ?", first.Order.OrderID, eventID))
	require.Equal(t, 1, count("tb_outbox_consumption WHERE event_id = ? AND consumer = ?", eventID, ConsumerName))
	got, err := svc.Order(ctx, writer, first.Order.OrderID)
	require.NoError(t, err)
	require.Equal(t, "applied", got.Status)
	_, err = svc.Order(ctx, Actor{Subject: "td-other"}, first.Order.OrderID)
	require.ErrorIs(t, err, ErrNotFound, "another owner's order is not found")

	// An event that contradicts its order fails for good and writes nothing.
	forged := ev.Envelope()
	forged.EventID = "00000000-0000-4000-8000-0000000000aa"
	err = a.Apply(ctx, forged, Created{OrderID: first.Order.OrderID, Owner: "td-other", Amount: 5})
	var perm outbox.PermanentError
	require.True(t, errors.As(err, &perm) && perm.Permanent(), "got %v", err)
	require.Equal(t, 1, count("td_effect"))
}

// The amount is an exact integer however it is spelled; unknown fields
// are ignored.
func TestParseCreate(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]int64{`{"amount":100}`: 100, `{"amount":1e2,"x":[1]}`: 100, `{"amount":100.0,"note":"n"}`: 100} {
		req, err := parseCreate([]byte(body))
		require.NoError(t, err, body)
		require.Equal(t, want, req.Amount, body)
	}
	for _, body := range []string{`{"amount":0.99999999999999999}`, `{"amount":"1"}`, `{"amount":1000001}`, `{"amount":1e999}`, `{"amount":1,"note":7}`} {
		_, err := parseCreate([]byte(body))
		var ve *ValidationError
		require.True(t, errors.As(err, &ve), "%s: %v", body, err)
	}
	_, err := parseCreate([]byte(`[]`))
	require.Error(t, err)
}
