package redis

import (
	"context"
	"strings"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/july/template/adapters/redis"

// Traced wraps client so every Do and DoMulti made under a recording span
// records a client span "redis <COMMAND>" with that span's provider. A
// call without a span in its context (a relay poll, a sweep, a probe)
// records nothing, as the Postgres hook does.
//
// It is ours rather than rueidisotel (not served for our rueidis): the
// span names the command only, never keys or arguments, because keys hold
// config keys and guard scopes and arguments hold values.
func Traced(client rueidis.Client) rueidis.Client { return tracedClient{Client: client} }

type tracedClient struct{ rueidis.Client }

func (c tracedClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return c.Client.Do(ctx, cmd)
	}
	// cmd is recycled by Do, so the name is read first.
	span := startSpan(ctx, parent, command(cmd.Commands()), 1)
	res := c.Client.Do(ctx, cmd)
	endSpan(span, res.Error())
	return res
}

func (c tracedClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() || len(multi) == 0 {
		return c.Client.DoMulti(ctx, multi...)
	}
	span := startSpan(ctx, parent, command(multi[0].Commands()), len(multi))
	res := c.Client.DoMulti(ctx, multi...)
	var err error
	for i := range res {
		if err = res[i].Error(); err != nil && !rueidis.IsRedisNil(err) {
			break
		}
	}
	endSpan(span, err)
	return res
}

func startSpan(ctx context.Context, parent trace.Span, op string, n int) trace.Span {
	attrs := []attribute.KeyValue{attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", op)}
	if n > 1 {
		attrs = append(attrs, attribute.Int("db.operation.batch.size", n))
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "redis "+op,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return span
}

// endSpan marks a failure by class only: a Redis error text can quote
// the key it failed on.
func endSpan(span trace.Span, err error) {
	if err != nil && !rueidis.IsRedisNil(err) {
		class := "transport"
		if _, ok := rueidis.IsRedisErr(err); ok {
			class = "redis"
		}
		span.SetAttributes(attribute.String("error.type", class))
		span.SetStatus(codes.Error, "redis command failed ("+class+" error)")
	}
	span.End()
}

// command is the command's name, e.g. GET or EVALSHA: the first word,
// which comes from our code and never from data.
func command(words []string) string {
	if len(words) == 0 {
		return "UNKNOWN"
	}
	return strings.ToUpper(words[0][:min(len(words[0]), 16)])
}
