package pgidem

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
)

// ErrNoConstraint is returned by Insert when the
// business table lacks the unique constraint on UniqueColumns.
var ErrNoConstraint = errors.New("insert idempotent: table has no UNIQUE (" +
	UniqueColumns + "): add it as shown on ColumnsSQL")

// defaultContentType is stored for a body saved without a Content-Type.
const defaultContentType = "application/json"

// maxContentTypeLen is idem_response_content_type's varchar length.
const maxContentTypeLen = 128

// sqlstateNoArbiter is SQLSTATE 42P10 (invalid_column_reference), raised
// when no unique index matches an ON CONFLICT target.
const sqlstateNoArbiter = "42P10"

// Insert inserts model, a pointer to a bun model embedding
// Record, with its idempotency columns set from key, inside the
// caller's transaction db. The business table's unique constraint decides
// between concurrent first requests (INSERT ... ON CONFLICT DO NOTHING),
// never a check-then-insert:
//
//   - DecisionNew, nil, nil: the row was inserted (model's returned columns,
//     such as an identity id, are filled). Do the rest of the work, then
//     call SaveResponse before commit.
//   - DecisionReplay, stored, nil: the command completed before with the
//     same fingerprint. Insert nothing more; answer with stored.
//   - DecisionReused, nil, idempotency.ErrKeyReused: the key was used with
//     a different fingerprint. Roll back; nothing was written.
//   - DecisionInProgress, nil, idempotency.ErrInProgress: the row exists
//     but has no stored response. Roll back; the client retries later.
//
// While another transaction holding the same key is still open, Postgres
// blocks this INSERT on the unique index until that transaction ends: after
// its commit this call decides from the committed row (usually Replay); after
// its rollback this call inserts. So an uncommitted first request is never
// visible, and InProgress only means a committed row without a response. In
// REPEATABLE READ or SERIALIZABLE a conflicting row committed after the
// snapshot makes the INSERT fail with a serialization error: retry the
// transaction. Other unique constraints of the table still fail with
// ErrConflict.
//
// Usage, in the create handler's transaction:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		order := &Order{AmountCents: req.AmountCents}
//		d, stored, err := pgidem.Insert(ctx, tx, order, key)
//		if err != nil {
//			return err // ErrKeyReused (422), ErrInProgress (409) or a failure
//		}
//		if d == idempotency.DecisionReplay {
//			replay = stored
//			return nil
//		}
//		// ... the rest of the business work, outbox events ...
//		body, _ = json.Marshal(toDTO(order))
//		return pgidem.SaveResponse(ctx, tx, order, ports.StoredResponse{
//			ResultRef: strconv.FormatInt(order.ID, 10), Status: http.StatusCreated, Body: body,
//		})
//	})
func Insert(ctx context.Context, db bun.IDB, model Model, key ports.IdempotencyKey) (idempotency.Decision, *ports.StoredResponse, error) {
	if err := validateIdemKey(key); err != nil {
		return 0, nil, err
	}
	cols := model.IdempotencyRecord()
	*cols = Record{
		IdemPrincipal:   key.Scope.Principal,
		IdemOperation:   key.Scope.Operation,
		IdemRequestID:   key.RequestID,
		IdemFingerprint: key.Fingerprint.String(),
	}
	res, err := db.NewInsert().Model(model).
		On("CONFLICT (" + UniqueColumns + ") DO NOTHING").
		Exec(ctx)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == sqlstateNoArbiter {
			return 0, nil, ErrNoConstraint
		}
		return 0, nil, fmt.Errorf("insert idempotent %s: %w", key.Scope.Operation, pgerr.Translate(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, nil, fmt.Errorf("insert idempotent %s: rows affected: %w", key.Scope.Operation, err)
	} else if n == 1 {
		return idempotency.DecisionNew, nil, nil
	}
	return decideExisting(ctx, db, modelTable(db, model), key)
}

// decideExisting reads the committed row that won the unique constraint and
// turns it into the core decision.
func decideExisting(ctx context.Context, db bun.IDB, table bun.Ident, key ports.IdempotencyKey) (idempotency.Decision, *ports.StoredResponse, error) {
	var (
		fp, ref, ctype sql.NullString
		status         sql.NullInt64
		body           []byte
	)
	err := db.NewSelect().TableExpr("?", table).
		ColumnExpr("idem_fingerprint, idem_result_ref, idem_response_status, idem_response_body, idem_response_content_type").
		Where("idem_principal = ? AND idem_operation = ? AND idem_request_id = ?",
			key.Scope.Principal, key.Scope.Operation, key.RequestID).
		Limit(1).
		Scan(ctx, &fp, &ref, &status, &body, &ctype)
	if errors.Is(err, sql.ErrNoRows) {
		// The winner was deleted between our INSERT and this read: nothing
		// to replay yet, and retrying the request inserts afresh.
		return idempotency.DecisionInProgress, nil, idempotency.ErrInProgress
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read idempotency record %s: %w", key.Scope.Operation, pgerr.Translate(err))
	}
	rec := &idempotency.Record{Scope: key.Scope, Key: key.RequestID, State: idempotency.StateInProgress}
	// An unparsable or other-version fingerprint stays zero, which equals
	// nothing: the request is answered Reused, never replayed blindly.
	rec.Fingerprint, _ = idempotency.ParseFingerprint(fp.String)
	if status.Valid {
		rec.State, rec.ResponseStatus, rec.ResultRef = idempotency.StateCompleted, int(status.Int64), ref.String
	}
	// A record stored by another fingerprint version (before an upgrade, or
	// before the route declared its command) is compared with the request
	// recomputed by that version, so a byte-identical retry replays.
	incoming := idempotency.InVersion(rec.Fingerprint.Version, key.Fingerprint, key.Refingerprint)
	d := idempotency.Decide(rec, incoming, time.Time{})
	switch d {
	case idempotency.DecisionReplay:
		return d, &ports.StoredResponse{ResultRef: ref.String, Status: int(status.Int64), Body: body, ContentType: ctype.String}, nil
	case idempotency.DecisionTakeover:
		// These columns carry no lease: a committed row without a response
		// stays in progress until SaveResponse completes it.
		d = idempotency.DecisionInProgress
	}
	return d, nil, d.Err()
}

// SaveResponse stores resp on the row Insert inserted
// for model, in the same transaction, so the response commits with the
// business fact and every retry replays it. Call it once, before commit.
// resp.Body is stored byte for byte: pass exactly the bytes the first
// response writes. An empty resp.ContentType with a body is stored as
// application/json.
func SaveResponse(ctx context.Context, db bun.IDB, model Model, resp ports.StoredResponse) error {
	cols := model.IdempotencyRecord()
	if cols.IdemRequestID == "" {
		return errors.New("save idempotent response: model has no idempotency key: call Insert first")
	}
	if resp.Status < 100 || resp.Status > 599 {
		return fmt.Errorf("save idempotent response: status %d is not an HTTP status", resp.Status)
	}
	if len(resp.ContentType) > maxContentTypeLen {
		return fmt.Errorf("save idempotent response: content type is %d bytes, over the column's %d", len(resp.ContentType), maxContentTypeLen)
	}
	var body any // NULL for no body: a replay then answers without one
	if len(resp.Body) > 0 {
		body = resp.Body
		resp.ContentType = cmp.Or(resp.ContentType, defaultContentType)
	}
	// The stored body is the answer the caller got (a payment link, a
	// token): it is bound, never formatted into the statement text, so a
	// failing or cancelled statement cannot write it to the server log.
	q := `UPDATE ` + pgx.Identifier{string(modelTable(db, model))}.Sanitize() + ` SET idem_result_ref = $1,
idem_response_status = $2, idem_response_body = $3, idem_response_content_type = $4
WHERE idem_principal = $5 AND idem_operation = $6 AND idem_request_id = $7`
	res, err := ExecBound(ctx, db, q,
		sql.NullString{String: resp.ResultRef, Valid: resp.ResultRef != ""}, resp.Status, body,
		sql.NullString{String: resp.ContentType, Valid: resp.ContentType != ""},
		cols.IdemPrincipal, cols.IdemOperation, cols.IdemRequestID)
	if err != nil {
		return fmt.Errorf("save idempotent response %s: %w", cols.IdemOperation, pgerr.Translate(err))
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("save idempotent response %s: %w: no row with this key (rows %d, err %w)", cols.IdemOperation, ports.ErrNotFound, n, err)
	}
	cols.IdemResultRef, cols.IdemResponseStatus = resp.ResultRef, resp.Status
	cols.IdemResponseBody, cols.IdemResponseContentType = resp.Body, resp.ContentType
	return nil
}

// modelTable returns the quoted table name of a bun model.
func modelTable(db bun.IDB, model any) bun.Ident {
	return bun.Ident(db.Dialect().Tables().Get(reflect.TypeOf(model)).Name)
}

func validateIdemKey(key ports.IdempotencyKey) error {
	if err := key.Scope.Validate(); err != nil {
		return fmt.Errorf("insert idempotent: %w", err)
	}
	if err := idempotency.ValidateKey(key.RequestID); err != nil {
		return fmt.Errorf("insert idempotent: %w", err)
	}
	if key.Fingerprint.IsZero() {
		return fmt.Errorf("insert idempotent: %w: fingerprint is zero; compute it with a Fingerprinter", idempotency.ErrInvalidInput)
	}
	return nil
}

// ExecBound runs q ($1, $2, ... placeholders) on db with args sent as bound
// parameters (pgx's QueryExecModeExec: an unnamed statement, fine behind
// a pooler in transaction mode), not formatted into the text as bun does:
// use it for statements carrying private values (a payment link, a
// stored answer, a file), so the text Postgres logs for a failing
// statement holds none of them (log_parameter_max_length_on_error is 0
// by default). db is a bun.Tx, *bun.DB or bun.Conn.
func ExecBound(ctx context.Context, db bun.IDB, q string, args ...any) (sql.Result, error) {
	args = append([]any{pgx.QueryExecModeExec}, args...)
	switch d := db.(type) {
	case bun.Tx:
		return d.Tx.ExecContext(ctx, q, args...)
	case *bun.Tx:
		return d.Tx.ExecContext(ctx, q, args...)
	case *bun.DB:
		return d.DB.ExecContext(ctx, q, args...)
	case bun.Conn:
		return d.Conn.ExecContext(ctx, q, args...)
	}
	return nil, fmt.Errorf("pgidem: ExecBound needs a bun.Tx, *bun.DB or bun.Conn, not %T", db)
}
