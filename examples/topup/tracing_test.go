package topup_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/examples/topup"
)

// ONE TRACE: a top-up through the real HTTP stack, Postgres, the relay and
// the Asynq worker, recorded by the SDK's in-memory exporter behind the
// apps' redacting provider. The request's spans form one trace; the
// relay's batch and the consumer's task each start their own trace and
// link to the outbox.append span whose context the row stored.
func TestOneTopupIsOneTraceWithLinkedDelivery(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp, err := tracing.New(t.Context(), tracing.Config{Service: tracing.Service{Name: "topup-test"}, Exporter: exp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })

	e := newEnv(t, envOpts{trace: tp})
	w := e.startRelay(t)
	res := e.create(t, "agent-trace", "topup-req-trace-1", createBody)
	o := decodeOrder(t, res)
	require.Eventually(t, func() bool { return e.orderStatus(t, o.TopupID) == topup.StatusCredited },
		waitLong, tick, "order %s never credited; logs:\n%s", o.TopupID, e.logs.String())
	env := e.envelopeOf(t, o.TopupID)

	var consumer tracetest.SpanStub
	require.Eventually(t, func() bool {
		var ok bool
		consumer, ok = findSpan(exp.GetSpans(), "process "+w.queue, "messaging.message.id", env.EventID)
		return ok && consumer.EndTime.After(consumer.StartTime)
	}, waitLong, tick, "no ended consumer span for event %s", env.EventID)
	spans := exp.GetSpans()

	// API: server span -> outbox.append -> the INSERT, one trace.
	server, ok := findSpan(spans, "POST /api/v1/topups", "july.request_id", "topup-req-trace-1")
	require.True(t, ok, "server span; got %v", names(spans))
	require.Equal(t, trace.SpanKindServer, server.SpanKind)
	require.Equal(t, "/api/v1/topups", attr(server, "http.route"))
	require.Equal(t, "201", attr(server, "http.response.status_code"))
	appendSpan, ok := findSpan(spans, "outbox.append", "july.outbox.event_id", env.EventID)
	require.True(t, ok, "outbox.append span; got %v", names(spans))
	require.Equal(t, server.SpanContext.SpanID(), appendSpan.Parent.SpanID(), "outbox.append is a child of the request")
	require.Equal(t, server.SpanContext.TraceID(), appendSpan.SpanContext.TraceID())
	require.Equal(t, env.RequestID, attr(appendSpan, "july.request_id"))
	require.Equal(t, env.CorrelationID, attr(appendSpan, "july.correlation_id"))
	require.Equal(t, topup.EventCreated, attr(appendSpan, "july.outbox.event_type"))
	require.NotEmpty(t, inTrace(spans, server.SpanContext.TraceID(), "INSERT tb_outbox_event"), "the request's queries are spans of its trace")
	require.NotEmpty(t, inTrace(spans, server.SpanContext.TraceID(), "SET"), "the request's guard acquire is a span of its trace")

	// The row (and so the envelope) carries outbox.append's W3C context.
	require.Equal(t, "00-"+appendSpan.SpanContext.TraceID().String()+"-"+appendSpan.SpanContext.SpanID().String()+"-01", env.TraceParent)
	require.True(t, queue.ProducerSpanContext(env).Equal(appendSpan.SpanContext.WithRemote(true)))

	// RELAY: its own trace, linked to outbox.append, with its steps as children.
	batch, ok := linkedTo(spans, "outbox.relay.batch", appendSpan.SpanContext)
	require.True(t, ok, "relay batch span linked to the append; got %v", names(spans))
	require.NotEqual(t, server.SpanContext.TraceID(), batch.SpanContext.TraceID(), "delivery is a trace of its own")
	for _, step := range []string{"outbox.claim", "send " + w.queue, "outbox.complete"} {
		require.NotEmpty(t, inTrace(spans, batch.SpanContext.TraceID(), step), "%s in the batch's trace", step)
	}
	require.Equal(t, "1", attr(batch, "july.outbox.delivered"))
	require.NotEmpty(t, inTrace(spans, batch.SpanContext.TraceID(), "UPDATE tb_outbox_event"), "the complete write, named by its statement and table (bun calls every raw query SELECT)")

	// WORKER: a consumer span linked (not parented) to outbox.append.
	require.Equal(t, trace.SpanKindConsumer, consumer.SpanKind)
	require.False(t, consumer.Parent.IsValid(), "the consumer span is a root, not a child of the request")
	_, linked := linkedTo([]tracetest.SpanStub{consumer}, consumer.Name, appendSpan.SpanContext)
	require.True(t, linked, "consumer links to the producer; links %+v", consumer.Links)
	require.Equal(t, env.EventID, attr(consumer, "messaging.message.id"))
	require.Equal(t, env.RequestID, attr(consumer, "july.request_id"))
	require.Equal(t, env.CorrelationID, attr(consumer, "july.correlation_id"))
	require.Equal(t, topup.EventCreated, attr(consumer, "july.outbox.event_type"))
	require.Equal(t, topup.EventCreated, attr(consumer, "july.asynq.task_type"))
	require.NotEmpty(t, inTrace(spans, consumer.SpanContext.TraceID(), "UPDATE"), "the credit's queries are children of the task")

	// Logs: the consumer's line names its span.
	credited := e.logs.Records(t, "topup credited")
	require.Len(t, credited, 1)
	require.Equal(t, consumer.SpanContext.TraceID().String(), credited[0]["trace_id"])
	require.Equal(t, consumer.SpanContext.SpanID().String(), credited[0]["span_id"])

	// No payload or secret in any attribute of any span.
	requireNoPayload(t, spans, res.Body, "wechat", "1500", "amount_cents", "Bearer", string(testSecret))
}

// requireNoPayload fails when an attribute key is a statement or a value
// contains one of the forbidden fragments (payload fields, the response
// body's pay link, credentials).
func requireNoPayload(t *testing.T, spans tracetest.SpanStubs, body string, forbidden ...string) {
	t.Helper()
	var view map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &view))
	if u, ok := view["pay_url"].(string); ok && u != "" {
		forbidden = append(forbidden, u)
	}
	for _, s := range spans {
		kvs := append([]string{}, s.Name)
		for _, a := range s.Attributes {
			require.NotContains(t, []string{"db.statement", "db.query.text", "url.query", "url.full"}, string(a.Key), "span %s", s.Name)
			kvs = append(kvs, a.Value.String())
		}
		for _, ev := range s.Events {
			for _, a := range ev.Attributes {
				kvs = append(kvs, a.Value.String())
			}
		}
		for _, v := range kvs {
			for _, f := range forbidden {
				require.NotContains(t, v, f, "span %s carries %q", s.Name, f)
			}
		}
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

func findSpan(spans tracetest.SpanStubs, name, key, value string) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		if s.Name == name && attr(s, key) == value {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

func linkedTo(spans tracetest.SpanStubs, name string, sc trace.SpanContext) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		if s.Name != name {
			continue
		}
		for _, l := range s.Links {
			if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
				return s, true
			}
		}
	}
	return tracetest.SpanStub{}, false
}

// inTrace returns the spans of trace id whose name starts with prefix.
func inTrace(spans tracetest.SpanStubs, id trace.TraceID, prefix string) []string {
	var out []string
	for _, s := range spans {
		if s.SpanContext.TraceID() == id && strings.HasPrefix(s.Name, prefix) {
			out = append(out, s.Name)
		}
	}
	return out
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}
