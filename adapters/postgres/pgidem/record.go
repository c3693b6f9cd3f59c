package pgidem

// Record is the idempotency record a business table embeds:
// there is no shared idempotency table: each table that an
// idempotent create command writes carries these columns on the row it
// creates, so the record commits or rolls back with the business fact.
//
// Embed it in the bun model and add the columns and the unique constraint
// to the table's migration (ColumnsSQL):
//
//	type Order struct {
//		bun.BaseModel `bun:"table:orders"`
//		ID            int64 `bun:",pk,autoincrement"`
//		AmountCents   int64
//		pgidem.Record
//	}
//
// The columns are nullable: rows created by other paths (imports, admin
// tools) leave them NULL, and NULLs never collide in a unique constraint.
// Business code sets none of the fields; Insert and
// SaveResponse do.
type Record struct {
	// IdemPrincipal and IdemOperation are the idempotency.Scope.
	IdemPrincipal string `bun:"idem_principal,nullzero"`
	IdemOperation string `bun:"idem_operation,nullzero"`
	// IdemRequestID is the caller's key.
	IdemRequestID string `bun:"idem_request_id,nullzero"`
	// IdemFingerprint is the first request's fingerprint ("v1:<hex>").
	IdemFingerprint string `bun:"idem_fingerprint,nullzero"`
	// IdemResultRef, IdemResponseStatus, IdemResponseBody and
	// IdemResponseContentType are the stored response; NULL status means the
	// command has not completed. The body is bytea, not jsonb: a replay
	// must return the first response's exact bytes, and jsonb would rewrite
	// them (key order, whitespace) and refuse a non-JSON body.
	IdemResultRef           string `bun:"idem_result_ref,nullzero"`
	IdemResponseStatus      int    `bun:"idem_response_status,nullzero"`
	IdemResponseBody        []byte `bun:"idem_response_body,type:bytea,nullzero"`
	IdemResponseContentType string `bun:"idem_response_content_type,nullzero"`
}

// ColumnsSQL is the DDL a business table's migration adds for
// Record. The unique constraint is what decides between
// concurrent first requests; Insert names its columns in ON
// CONFLICT, so it must exist with exactly these columns (in a CREATE TABLE,
// drop the "ADD COLUMN" words):
//
//	ALTER TABLE orders
//	  ADD COLUMN idem_principal       varchar(128),
//	  ADD COLUMN idem_operation       varchar(64),
//	  ADD COLUMN idem_request_id      varchar(128),
//	  ADD COLUMN idem_fingerprint     varchar(80),
//	  ADD COLUMN idem_result_ref      varchar(128),
//	  ADD COLUMN idem_response_status int,
//	  ADD COLUMN idem_response_body   bytea,
//	  ADD COLUMN idem_response_content_type varchar(128),
//	  ADD COLUMN idem_saved_at        timestamptz DEFAULT now(),
//	  ADD CONSTRAINT uq_orders_idem UNIQUE (idem_principal, idem_operation, idem_request_id);
//
// idem_saved_at (SavedAtColumnSQL) is when the record was saved, stamped
// by its DEFAULT at insert; Expirer clears records older than the
// retention window by it (index: ExpiringIndexSQL). A table without it
// still works with Insert and SaveResponse, but its records never expire.
//
// The response body is bytea, so a replay returns the first response's
// status, Content-Type and body byte for byte (the IETF httpapi
// Idempotency-Key draft; docs/architecture.md, "replayed response"),
// whatever the media type.
//
// Each registered table's migration repeats these columns by hand;
// examples/columns_test.go compares every registered table with this
// constant, so a copy that drifts fails.
const ColumnsSQL = `idem_principal varchar(128),
idem_operation varchar(64),
idem_request_id varchar(128),
idem_fingerprint varchar(80),
idem_result_ref varchar(128),
idem_response_status int,
idem_response_body bytea,
idem_response_content_type varchar(128),
` + SavedAtColumnSQL

// UniqueColumns is the column list of the business table's
// unique constraint and of Insert's ON CONFLICT target.
const UniqueColumns = "idem_principal, idem_operation, idem_request_id"

// Model is a bun model that embeds Record; the
// embedding provides the method.
type Model interface {
	IdempotencyRecord() *Record
}

// IdempotencyRecord returns c itself, so a model embedding
// Record satisfies Model.
func (c *Record) IdempotencyRecord() *Record { return c }
