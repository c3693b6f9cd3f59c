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
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/july/template/adapters/postgres"

// TraceHook returns the query hook Open installs on every *bun.DB: add
// it to a bun.DB built another way (db = db.WithQueryHook(postgres.TraceHook("mydb")))
// to trace its queries. database is the span's db.namespace ("" leaves it
// out).
func TraceHook(database string) bun.QueryHook { return traceHook{namespace: database} }

// traceHook records one client span per query under the span the query's
// context carries, with that span's provider. A query without a span in
// its context (a relay poll, a sweep, a migration) records nothing, so an
// idle relay does not flood the collector with empty polls.
//
// It is ours rather than bunotel's (v1.2.x for our bun v1.3): bunotel
// records a span for every query, a context without a span included; it
// exports the statement text as db.statement (unformatted unless asked
// for the formatted one, which inlines the arguments) where ours exports
// no text at all; and it follows an older version of the conventions'
// names. The span carries the operation, the table, the database and, on
// failure, the SQLSTATE only.
//
// Names and attributes follow OpenTelemetry's database conventions: the
// span is "{db.operation.name} {db.collection.name}" (SELECT
// tb_outbox_event), or the operation alone when the statement does not
// name exactly one table; db.system.name is postgresql and db.namespace
// the database; a failure sets error.type and db.response.status_code to
// the SQLSTATE (a driver or context error to its Go type).
type traceHook struct{ namespace string }

type spanKey struct{}

func (h traceHook) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() || !parent.IsRecording() {
		return ctx
	}
	op := operation(ev)
	name, attrs := op, []attribute.KeyValue{semconv.DBSystemNamePostgreSQL, semconv.DBOperationName(op)}
	if h.namespace != "" {
		attrs = append(attrs, semconv.DBNamespace(h.namespace))
	}
	if table := collection(op, ev.Query); table != "" {
		name += " " + table
		attrs = append(attrs, semconv.DBCollectionName(table))
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
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
		var pgErr *pgconn.PgError
		if errors.As(ev.Err, &pgErr) {
			span.SetAttributes(semconv.ErrorTypeKey.String(pgErr.Code), semconv.DBResponseStatusCode(pgErr.Code))
			span.SetStatus(codes.Error, "query failed: SQLSTATE "+pgErr.Code)
		} else {
			et := semconv.ErrorType(ev.Err)
			span.SetAttributes(et)
			span.SetStatus(codes.Error, "query failed: "+et.Value.AsString())
		}
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

// collection is the one table the statement works on, or "" when it names
// none or several (a join, a subquery, a list of tables) or the text is
// not the shape this reads: UPDATE t, INSERT INTO t, DELETE FROM t, and a
// SELECT with a single FROM t. The name is an identifier from our code
// (bun quotes it; a value is a quoted literal and never matches).
func collection(op, query string) string {
	if strings.Contains(query, "$$") {
		return ""
	}
	query = blankLiterals(query) // bun inlines values: never read one as a name
	upper := asciiUpper(query)   // same byte offsets as query
	var after string
	switch op {
	case "UPDATE":
		after = "UPDATE"
	case "INSERT":
		after = "INTO"
	case "DELETE", "SELECT":
		after = "FROM"
		if keywordCount(upper, "FROM") != 1 || keywordCount(upper, "JOIN") > 0 {
			return ""
		}
	default:
		return ""
	}
	i := keywordIndex(upper, after)
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeftFunc(query[i+len(after):], unicode.IsSpace)
	if op == "UPDATE" || op == "DELETE" { // UPDATE ONLY t, DELETE FROM ONLY t
		if r, ok := cutKeyword(rest, "ONLY"); ok {
			rest = r
		}
	}
	table, rest := identifier(rest)
	if table == "" {
		return ""
	}
	if op == "SELECT" || op == "DELETE" { // FROM f(...), FROM a, b, DELETE ... USING b: not one table
		r := strings.TrimLeftFunc(rest, unicode.IsSpace)
		if strings.HasPrefix(r, "(") || strings.HasPrefix(r, ",") || keywordCount(asciiUpper(r), "USING") > 0 {
			return ""
		}
		if alias, ok := cutKeyword(r, "AS"); ok {
			r = alias
		}
		if _, after := identifier(r); strings.HasPrefix(strings.TrimLeftFunc(after, unicode.IsSpace), ",") {
			return ""
		}
	}
	return table
}

// keywordCount is how often kw stands as a word in upper.
func keywordCount(upper, kw string) int {
	n := 0
	for i := keywordIndex(upper, kw); i >= 0; i = keywordIndex(upper, kw) {
		n++
		upper = upper[i+len(kw):]
	}
	return n
}

// keywordIndex is the index of the first kw in upper that stands as a
// word, or -1.
func keywordIndex(upper, kw string) int {
	for off := 0; ; {
		i := strings.Index(upper[off:], kw)
		if i < 0 {
			return -1
		}
		i += off
		end := i + len(kw)
		if (i == 0 || !isIdent(rune(upper[i-1]))) && (end == len(upper) || !isIdent(rune(upper[end]))) {
			return i
		}
		off = end
	}
}

func cutKeyword(s, kw string) (string, bool) {
	if len(s) > len(kw) && strings.EqualFold(s[:len(kw)], kw) && unicode.IsSpace(rune(s[len(kw)])) {
		return strings.TrimLeftFunc(s[len(kw):], unicode.IsSpace), true
	}
	return s, false
}

// identifier reads a possibly schema-qualified, possibly double-quoted
// name at the start of s: the name without quotes (at most 127 bytes) and
// what follows it.
func identifier(s string) (string, string) {
	var b strings.Builder
	for {
		if strings.HasPrefix(s, `"`) {
			end := strings.IndexByte(s[1:], '"')
			if end <= 0 || strings.ContainsFunc(s[1:1+end], func(r rune) bool { return !isIdent(r) }) {
				return "", s
			}
			b.WriteString(s[1 : 1+end])
			s = s[end+2:]
		} else {
			n := strings.IndexFunc(s, func(r rune) bool { return !isIdent(r) })
			if n < 0 {
				n = len(s)
			}
			if n == 0 || unicode.IsDigit(rune(s[0])) {
				return "", s
			}
			b.WriteString(s[:n])
			s = s[n:]
		}
		if !strings.HasPrefix(s, ".") {
			break
		}
		b.WriteByte('.')
		s = s[1:]
	}
	if b.Len() > 127 {
		return "", s
	}
	return b.String(), s
}

// blankLiterals replaces the contents of single-quoted literals with
// spaces, keeping every offset.
func blankLiterals(s string) string {
	b := []byte(s)
	in := false
	for i, c := range b {
		switch {
		case c == '\'':
			in = !in
		case in:
			b[i] = ' '
		}
	}
	return string(b)
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func isIdent(r rune) bool {
	return r == '_' || r == '$' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
}
