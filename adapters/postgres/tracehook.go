package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/july/template/adapters/postgres"

// TraceHook returns the query hook Open installs on every *bun.DB: add
// it to a bun.DB built another way (db.AddQueryHook) to trace its queries.
func TraceHook() bun.QueryHook { return traceHook{} }

// traceHook records one client span per query under the span the query's
// context carries, with that span's provider. A query without a span in
// its context (a relay poll, a sweep, a migration) records nothing, so an
// idle relay does not flood the collector with empty polls.
//
// It is ours rather than bunotel (served only at v1.2.x for our bun
// v1.3.0) because bun inlines the arguments into the query text and
// bunotel exports that text as db.statement: payloads and secrets would
// leave the process. The span carries the operation and, on failure, the
// SQLSTATE only.
type traceHook struct{}

type spanKey struct{}

func (traceHook) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() || !parent.IsRecording() {
		return ctx
	}
	op := operation(ev)
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "postgresql "+op,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system.name", "postgresql"), attribute.String("db.operation.name", op)))
	// The span rides on the event, not the context: bun keeps BEGIN's
	// context for the whole transaction, which would make every later
	// query a child of the (ended) BEGIN span.
	if ev.Stash == nil {
		ev.Stash = map[any]any{}
	}
	ev.Stash[spanKey{}] = span
	return ctx
}

func (traceHook) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	span, ok := ev.Stash[spanKey{}].(trace.Span)
	if !ok {
		return
	}
	if ev.Err != nil && !errors.Is(ev.Err, sql.ErrNoRows) {
		code := "error"
		var pgErr *pgconn.PgError
		if errors.As(ev.Err, &pgErr) {
			code = pgErr.Code
		}
		span.SetAttributes(attribute.String("db.response.status_code", code))
		span.SetStatus(codes.Error, "query failed: SQLSTATE "+code)
	}
	span.End()
}

// operation names the statement: bun reports every raw query (NewRaw) as
// SELECT, so for those the first word of the SQL is taken (UPDATE, WITH,
// ...): a keyword from our code, never data.
func operation(ev *bun.QueryEvent) string {
	if _, raw := ev.IQuery.(*bun.RawQuery); !raw {
		return ev.Operation()
	}
	q := strings.TrimLeftFunc(ev.Query, unicode.IsSpace)
	if i := strings.IndexFunc(q, unicode.IsSpace); i > 0 {
		q = q[:i]
	}
	return strings.ToUpper(q[:min(len(q), 16)])
}
