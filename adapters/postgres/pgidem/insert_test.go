package pgidem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
)

// idemOrder is a business row embedding the idempotency columns.
type idemOrder struct {
	bun.BaseModel `bun:"table:orders"`
	ID            int64 `bun:",pk,autoincrement"`
	AmountCents   int64
	pgidem.Record
}

// newOrdersDB returns a migrated database with an orders table that embeds
// the idempotency columns and their unique constraint.
func newOrdersDB(t *testing.T) *bun.DB {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	_, err := db.ExecContext(t.Context(), `CREATE TABLE orders (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		amount_cents bigint NOT NULL,
		`+pgidem.ColumnsSQL+`,
		CONSTRAINT uq_orders_idem UNIQUE (`+pgidem.UniqueColumns+`))`)
	require.NoError(t, err)
	return db
}

func fingerprint(t *testing.T, body string) idempotency.Fingerprint {
	t.Helper()
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	require.NoError(t, err)
	f, err := fp.FromJSON([]byte(body))
	require.NoError(t, err, "body %s", body)
	return f
}

func idemKey(t *testing.T, principal, requestID, body string) ports.IdempotencyKey {
	t.Helper()
	return ports.IdempotencyKey{
		Scope:       idempotency.Scope{Principal: principal, Operation: "order.create"},
		RequestID:   requestID,
		Fingerprint: fingerprint(t, body),
	}
}

// createOrder is the business flow: insert-or-detect, then store the
// response, all in one transaction.
func createOrder(ctx context.Context, db *bun.DB, key ports.IdempotencyKey, amount int64) (idempotency.Decision, *ports.StoredResponse, error) {
	var (
		d      idempotency.Decision
		stored *ports.StoredResponse
	)
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		o := &idemOrder{AmountCents: amount}
		var err error
		d, stored, err = pgidem.Insert(ctx, tx, o, key)
		if err != nil || d != idempotency.DecisionNew {
			return err
		}
		body, err := json.Marshal(map[string]any{"id": o.ID, "amount_cents": amount})
		if err != nil {
			return err
		}
		stored = &ports.StoredResponse{ResultRef: strconv.FormatInt(o.ID, 10), Status: http.StatusCreated, Body: body}
		return pgidem.SaveResponse(ctx, tx, o, *stored)
	})
	return d, stored, err
}

func countOrders(t *testing.T, db *bun.DB) int64 {
	t.Helper()
	n, err := db.NewSelect().Table("orders").Count(t.Context())
	require.NoError(t, err)
	return n
}

func TestInsertDecisions(t *testing.T) {
	t.Parallel()
	db := newOrdersDB(t)
	ctx := t.Context()

	d, first, err := createOrder(ctx, db, idemKey(t, "user-1", "req-00000001", `{"amount":100}`), 100)
	require.NoError(t, err)
	require.Equal(t, idempotency.DecisionNew, d, "rule: the first request inserts")

	d, replay, err := createOrder(ctx, db, idemKey(t, "user-1", "req-00000001", `{ "amount" : 100.0 }`), 100)
	require.NoError(t, err)
	require.Equal(t, idempotency.DecisionReplay, d, "rule: same scope, key and fingerprint replays")
	require.Equal(t, first.Status, replay.Status)
	require.Equal(t, first.ResultRef, replay.ResultRef)
	require.Equal(t, string(first.Body), string(replay.Body), "rule: the stored body is replayed byte for byte")
	require.Equal(t, "application/json", replay.ContentType, "rule: a body saved without a Content-Type is JSON")

	d, _, err = createOrder(ctx, db, idemKey(t, "user-1", "req-00000001", `{"amount":999}`), 999)
	require.ErrorIs(t, err, idempotency.ErrKeyReused, "rule: same key, different fingerprint is reused")
	require.Equal(t, idempotency.DecisionReused, d)
	require.EqualValues(t, 1, countOrders(t, db), "rule: a reused key writes nothing")

	d, _, err = createOrder(ctx, db, idemKey(t, "user-2", "req-00000001", `{"amount":100}`), 100)
	require.NoError(t, err)
	require.Equal(t, idempotency.DecisionNew, d, "rule: the same key from another principal is another command")
	require.EqualValues(t, 2, countOrders(t, db))
}

func TestInsertCommittedWithoutResponseIsInProgress(t *testing.T) {
	t.Parallel()
	db := newOrdersDB(t)
	key := idemKey(t, "user-1", "req-00000002", `{"amount":1}`)

	d, _, err := pgidem.Insert(t.Context(), db, &idemOrder{AmountCents: 1}, key)
	require.NoError(t, err)
	require.Equal(t, idempotency.DecisionNew, d)

	d, stored, err := pgidem.Insert(t.Context(), db, &idemOrder{AmountCents: 1}, key)
	require.ErrorIs(t, err, idempotency.ErrInProgress, "rule: a row without a stored response is in progress")
	require.Equal(t, idempotency.DecisionInProgress, d)
	require.Nil(t, stored)

	_, _, err = pgidem.Insert(t.Context(), db, &idemOrder{AmountCents: 1}, idemKey(t, "user-1", "req-00000002", `{"amount":2}`))
	require.ErrorIs(t, err, idempotency.ErrKeyReused, "rule: a different fingerprint is reused even while in progress")
}

func TestInsertRejectsBadInput(t *testing.T) {
	t.Parallel()
	db := newOrdersDB(t)
	good := idemKey(t, "user-1", "req-00000003", `{}`)

	tests := []struct {
		name string
		key  func() ports.IdempotencyKey
		want error
	}{
		{"bad scope", func() ports.IdempotencyKey { k := good; k.Scope.Operation = "create"; return k }, idempotency.ErrScopeInvalid},
		{"missing key", func() ports.IdempotencyKey { k := good; k.RequestID = ""; return k }, idempotency.ErrKeyMissing},
		{"malformed key", func() ports.IdempotencyKey { k := good; k.RequestID = "bad key!"; return k }, idempotency.ErrKeyMalformed},
		{"zero fingerprint", func() ports.IdempotencyKey { k := good; k.Fingerprint = idempotency.Fingerprint{}; return k }, idempotency.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := pgidem.Insert(t.Context(), db, &idemOrder{}, tt.key())
			require.ErrorIs(t, err, tt.want, "key %+v", tt.key())
		})
	}
	require.EqualValues(t, 0, countOrders(t, db))
}

func TestInsertWithoutConstraintFailsLoudly(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{}).Bun
	_, err := db.ExecContext(t.Context(), `CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		amount_cents bigint NOT NULL, `+pgidem.ColumnsSQL+`)`)
	require.NoError(t, err)

	_, _, err = pgidem.Insert(t.Context(), db, &idemOrder{}, idemKey(t, "user-1", "req-00000004", `{}`))
	require.ErrorIs(t, err, pgidem.ErrNoConstraint)
}

// The unique constraint, not a check-then-insert, decides between
// concurrent first requests: exactly one inserts, the others replay it.
func TestInsertConcurrentFirstRequestsCreateOneRow(t *testing.T) {
	t.Parallel()
	db := newOrdersDB(t)
	key := idemKey(t, "user-1", "req-00000005", `{"amount":5}`)

	const n = 50
	decisions := make([]idempotency.Decision, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			decisions[i], _, errs[i] = createOrder(context.WithoutCancel(t.Context()), db, key, 5)
		})
	}
	close(start)
	wg.Wait()

	counts := map[idempotency.Decision]int{}
	for i := range n {
		if errs[i] != nil && !errors.Is(errs[i], idempotency.ErrInProgress) {
			require.NoError(t, errs[i], "request %d", i)
		}
		counts[decisions[i]]++
	}
	t.Logf("decisions %v", counts)
	require.Equal(t, 1, counts[idempotency.DecisionNew], "decisions %v", counts)
	require.Equal(t, n-1, counts[idempotency.DecisionReplay]+counts[idempotency.DecisionInProgress], "decisions %v", counts)
	require.EqualValues(t, 1, countOrders(t, db), fmt.Sprintf("rule: %d identical first requests create one row", n))
}

// The stored response is bytea: a replay gets the saved bytes and
// Content-Type back unchanged, JSON or not.
func TestSaveResponseKeepsExactBytes(t *testing.T) {
	t.Parallel()
	db := newOrdersDB(t)
	tests := []struct {
		name     string
		resp     ports.StoredResponse
		wantType string
	}{
		{"json with spacing and key order jsonb would rewrite",
			ports.StoredResponse{Status: http.StatusCreated, Body: []byte(`{"zeta": 1,  "id":"a",` + "\n" + `"n":1.50}` + "\n")}, "application/json"},
		{"non-json body",
			ports.StoredResponse{Status: http.StatusAccepted, Body: []byte("sku,qty\r\n\x00\xff"), ContentType: "text/csv; charset=utf-8"}, "text/csv; charset=utf-8"},
		{"no body",
			ports.StoredResponse{Status: http.StatusNoContent, ResultRef: "r-1"}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key := idemKey(t, "user-1", fmt.Sprintf("req-bytes-%04d", i), `{"amount":1}`)
			o := &idemOrder{AmountCents: 1}
			d, _, err := pgidem.Insert(t.Context(), db, o, key)
			require.NoError(t, err)
			require.Equal(t, idempotency.DecisionNew, d)
			require.NoError(t, pgidem.SaveResponse(t.Context(), db, o, tt.resp), "resp %+v", tt.resp)

			d, got, err := pgidem.Insert(t.Context(), db, &idemOrder{AmountCents: 1}, key)
			require.NoError(t, err)
			require.Equal(t, idempotency.DecisionReplay, d)
			require.Equal(t, tt.resp.Status, got.Status, "resp %+v", tt.resp)
			require.Equal(t, tt.resp.ResultRef, got.ResultRef, "resp %+v", tt.resp)
			require.Equal(t, string(tt.resp.Body), string(got.Body), "rule: the body is stored byte for byte; resp %+v", tt.resp)
			require.Equal(t, tt.wantType, got.ContentType, "resp %+v", tt.resp)
		})
	}
}

func TestSaveResponseRejectsLongContentType(t *testing.T) {
	t.Parallel()
	db := newOrdersDB(t)
	o := &idemOrder{AmountCents: 1}
	_, _, err := pgidem.Insert(t.Context(), db, o, idemKey(t, "user-1", "req-ctype-0001", `{}`))
	require.NoError(t, err)
	long := "application/" + strings.Repeat("x", 120)
	err = pgidem.SaveResponse(t.Context(), db, o, ports.StoredResponse{Status: http.StatusOK, Body: []byte("x"), ContentType: long})
	require.ErrorContains(t, err, "content type", "content type of %d bytes", len(long))
}
