package tracing_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/relay"
)

// SPAN CONVENTIONS (docs/monitoring.md, "Tracing"): every kind of span the
// template records, through the apps' redacting provider, with the name
// and the attributes OpenTelemetry's semantic conventions require of it.
// Span names have bounded cardinality (a client cannot mint one with a
// bogus method or path), and every attribute is either a semantic
// convention's or the template's own under july.*.
func TestSpanNamesAndAttributesFollowTheConventions(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp, err := tracing.New(t.Context(), tracing.Config{Service: tracing.Service{Name: "conventions"}, Exporter: exp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	root := func(t *testing.T) (context.Context, func()) {
		ctx, span := tp.Tracer("test").Start(t.Context(), "root")
		return ctx, func() { span.End() }
	}

	t.Run("http", func(t *testing.T) {
		e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{httpx.Trace(tp, nil)}}, slog.New(slog.DiscardHandler))
		e.GET("/conv/things/:id", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
		e.GET("/conv/boom", func(echo.Context) error { return echo.NewHTTPError(http.StatusServiceUnavailable) })
		for _, c := range []struct{ method, path, name, route, wantMethod string }{
			{"FOOBAR", "/conv/things/42", "HTTP", "", "_OTHER"}, // first: a bogus method never names a span (semconv: HTTP)
			{http.MethodGet, "/conv/things/42", "GET /conv/things/:id", "/conv/things/:id", "GET"},
			{http.MethodGet, "/conv/nowhere/42", "GET", "", "GET"},                // 404: the method only
			{http.MethodPost, "/conv/things/42", "POST", "", "POST"},              // 405: no route matched the method
			{"FOOBAR", "/conv/nowhere/" + uuid.NewString(), "HTTP", "", "_OTHER"}, // and no raw path
			{http.MethodGet, "/conv/boom", "GET /conv/boom", "/conv/boom", "GET"}, // 5xx: error.type
		} {
			exp.Reset()
			req := httptest.NewRequest(c.method, c.path, nil)
			req.Header.Set("X-Request-ID", "conv-req-0001")
			e.ServeHTTP(httptest.NewRecorder(), req)
			s := only(t, exp.GetSpans(), c.name)
			require.Equal(t, trace.SpanKindServer, s.SpanKind)
			requireAttrs(t, s, map[string]string{"http.request.method": c.wantMethod, "url.scheme": "http", "july.request_id": "conv-req-0001"})
			require.Equal(t, c.route, attr(s, "http.route"), "%s %s", c.method, c.path)
			require.NotEmpty(t, attr(s, "http.response.status_code"))
			if c.wantMethod == "_OTHER" {
				require.Equal(t, c.method, attr(s, "http.request.method_original"))
			}
			if c.path == "/conv/boom" {
				require.Equal(t, "503", attr(s, "error.type"))
			}
		}
	})

	t.Run("postgres", func(t *testing.T) {
		tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
		db := tdb.Bun.WithQueryHook(postgres.TraceHook(tdb.Name))
		exp.Reset()
		ctx, end := root(t)
		var ids []int64
		require.NoError(t, db.NewSelect().Table("tb_outbox_event").Column("id").Limit(1).Scan(ctx, &ids))
		_, err := db.NewRaw("UPDATE tb_outbox_event SET status = status WHERE id = ?", -1).Exec(ctx)
		require.NoError(t, err)
		_, err = db.NewRaw("SELECT 1 FROM tb_outbox_event a JOIN tb_system_config b ON a.id = b.id").Exec(ctx)
		require.NoError(t, err)
		_, err = db.NewRaw("SELECT secret_column FROM tb_no_such_table").Exec(ctx)
		require.Error(t, err)
		end()
		spans := exp.GetSpans()
		for name, want := range map[string]map[string]string{
			"SELECT tb_outbox_event": {"db.system.name": "postgresql", "db.operation.name": "SELECT", "db.collection.name": "tb_outbox_event", "db.namespace": tdb.Name},
			"UPDATE tb_outbox_event": {"db.system.name": "postgresql", "db.operation.name": "UPDATE", "db.collection.name": "tb_outbox_event"},
			"SELECT":                 {"db.system.name": "postgresql", "db.operation.name": "SELECT", "db.collection.name": ""},
			"SELECT tb_no_such_table": {"db.system.name": "postgresql", "db.operation.name": "SELECT", "db.collection.name": "tb_no_such_table",
				"error.type": "42P01", "db.response.status_code": "42P01"},
		} {
			s := only(t, spans, name)
			require.Equal(t, trace.SpanKindClient, s.SpanKind)
			requireAttrs(t, s, want)
		}
	})

	t.Run("redis", func(t *testing.T) {
		r := testinfra.NewRedis(t)
		c := redis.Traced(r.Client)
		exp.Reset()
		ctx, end := root(t)
		require.NoError(t, c.Do(ctx, c.B().Set().Key(r.Prefix+"k").Value("v").Build()).Error())
		for _, res := range c.DoMulti(ctx, c.B().Get().Key(r.Prefix+"k").Build(), c.B().Get().Key(r.Prefix+"k").Build()) {
			require.NoError(t, res.Error())
		}
		require.Error(t, c.Do(ctx, c.B().Lpush().Key(r.Prefix+"k").Element("x").Build()).Error())
		end()
		spans := exp.GetSpans()
		requireAttrs(t, only(t, spans, "SET"), map[string]string{"db.system.name": "redis", "db.operation.name": "SET"})
		requireAttrs(t, only(t, spans, "BATCH"), map[string]string{"db.system.name": "redis", "db.operation.name": "BATCH", "db.operation.batch.size": "2"})
		requireAttrs(t, only(t, spans, "LPUSH"), map[string]string{"db.system.name": "redis", "db.operation.name": "LPUSH", "error.type": "WRONGTYPE"})
	})

	t.Run("messaging and relay", func(t *testing.T) {
		db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
		r := testinfra.NewRedis(t)
		q := r.AsynqQueue(t, "conv")
		opt, err := asynq.ParseRedisURI(r.URL)
		require.NoError(t, err)
		client := asynq.NewClient(opt)
		t.Cleanup(func() { _ = client.Close() })
		enq, err := queue.NewPublisher(client, queue.Config{Queue: q})
		require.NoError(t, err)
		done := make(chan struct{}, 1)
		mux, err := queue.NewMux(slog.New(slog.DiscardHandler), []queue.Consumer{{EventType: "conv.happened",
			Handler: queue.Handle(func(context.Context, outbox.Envelope, map[string]any) error { done <- struct{}{}; return nil })}})
		require.NoError(t, err)
		mux.Use(queue.TraceMiddleware(tp))
		srv := queue.NewServer(opt, queue.ServerConfig{Queues: map[string]int{q: 1}, Concurrency: 1, Logger: slog.New(slog.DiscardHandler), ShutdownTimeout: time.Second})
		require.NoError(t, srv.Start(mux))
		t.Cleanup(srv.Shutdown)
		exp.Reset()

		created := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" // outbox.append's context, as stored
		env := outbox.Envelope{EventID: uuid.NewString(), EventType: "conv.happened", PayloadVersion: 1, AggregateType: "conv", AggregateID: "a-1",
			ResourceType: "conv", ResourceID: "r-1", RequestID: "conv-req-0002", CorrelationID: "conv-corr-0002", OccurredAt: time.Now(),
			Payload: json.RawMessage(`{"n":1}`), TraceParent: created}
		now := time.Now()
		ctx, endBatch := tracing.NewRelay(tp).StartBatch(t.Context(), relay.ClaimedBatch{Owner: "relay-conv", ClaimStart: now, ClaimEnd: now,
			Events: []outbox.Event{{EventID: env.EventID, EventType: env.EventType, RequestID: env.RequestID, CorrelationID: env.CorrelationID}}})
		for _, err := range tracing.Publisher(enq, tp).Publish(ctx, []outbox.Envelope{env}) {
			require.NoError(t, err)
		}
		store, err := pgoutbox.NewStore(db.Bun, pgoutbox.Config{})
		require.NoError(t, err)
		_, err = tracing.Store(store, tp).Complete(ctx, "relay-conv", now, nil)
		require.NoError(t, err)
		endBatch(relay.BatchResult{Delivered: 1}, nil)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the task was never processed")
		}
		var spans tracetest.SpanStubs
		require.Eventually(t, func() bool { spans = exp.GetSpans(); return has(spans, "process "+q) }, 10*time.Second, 10*time.Millisecond)

		send := only(t, spans, "send "+q)
		require.Equal(t, trace.SpanKindClient, send.SpanKind, "semconv: a send separate from the messages' creation is CLIENT")
		require.Len(t, send.Links, 1, "semconv: the send links to each message's creation context")
		require.Equal(t, "00f067aa0ba902b7", send.Links[0].SpanContext.SpanID().String())
		requireAttrs(t, send, map[string]string{"messaging.system": "asynq", "messaging.operation.name": "send", "messaging.operation.type": "send",
			"messaging.destination.name": q, "messaging.message.id": env.EventID, "july.outbox.event_id": env.EventID})
		process := only(t, spans, "process "+q)
		require.Equal(t, trace.SpanKindConsumer, process.SpanKind)
		requireAttrs(t, process, map[string]string{"messaging.system": "asynq", "messaging.operation.name": "process", "messaging.operation.type": "process",
			"messaging.destination.name": q, "messaging.message.id": env.EventID, "july.asynq.task_type": "conv.happened",
			"july.outbox.event_id": env.EventID, "july.request_id": env.RequestID, "july.correlation_id": env.CorrelationID})
		requireAttrs(t, only(t, spans, "outbox.relay.batch"), map[string]string{"july.outbox.owner": "relay-conv", "july.outbox.delivered": "1"})
		requireAttrs(t, only(t, spans, "outbox.claim"), map[string]string{"july.outbox.claimed": "1"})
		requireAttrs(t, only(t, spans, "outbox.complete"), map[string]string{"july.outbox.rows": "0"})
	})
}

// conventional is the set of attribute namespaces the conventions own.
var conventional = []string{"db.", "http.", "url.", "messaging.", "error.type", "server.", "network.", "process.exit.code"}

// requireAttrs checks want (an empty value: the attribute is absent) and
// that every key (no error.class, no bare event_id) of s, its events and its links is conventional or july.*.
func requireAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	for k, v := range want {
		require.Equal(t, v, attr(s, k), "span %q attribute %s", s.Name, k)
	}
	keys := map[string]bool{}
	for _, a := range s.Attributes {
		keys[string(a.Key)] = true
	}
	for _, ev := range s.Events {
		for _, a := range ev.Attributes {
			keys[string(a.Key)] = true
		}
	}
	for _, l := range s.Links {
		for _, a := range l.Attributes {
			keys[string(a.Key)] = true
		}
	}
	for k := range keys {
		ok := strings.HasPrefix(k, "july.")
		for _, p := range conventional {
			ok = ok || strings.HasPrefix(k, p)
		}
		require.True(t, ok, "span %q attribute %s is neither a semantic convention's nor namespaced july.*", s.Name, k)
	}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// only returns the one span named name, failing with the names recorded.
func only(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
		if s.Name == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q among %q", name, names)
	return found[0]
}

func has(spans tracetest.SpanStubs, name string) bool {
	for _, s := range spans {
		if s.Name == name {
			return true
		}
	}
	return false
}
