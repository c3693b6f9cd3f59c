package redis

import (
	"context"
	"strings"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/july/template/adapters/redis"

// Traced wraps client so every Do and DoMulti made under a recording span
// records a client span with that span's provider, named as OpenTelemetry's
// database conventions name Redis spans: by the command (GET, EVALSHA),
// and BATCH for a pipeline or a MULTI/EXEC of several commands (with
// db.operation.batch.size). Attributes: db.system.name redis,
// db.operation.name; on failure error.type, the Redis error's code
// (WRONGTYPE, NOSCRIPT, ERR) or the transport error's Go type. A call
// without a span in its context (a relay poll, a sweep, a probe) records
// nothing, as the Postgres hook does.
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
	op := "BATCH"
	if len(multi) == 1 {
		op = command(multi[0].Commands())
	}
	span := startSpan(ctx, parent, op, len(multi))
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
	attrs := []attribute.KeyValue{semconv.DBSystemNameRedis, semconv.DBOperationName(op)}
	if n > 1 {
		attrs = append(attrs, semconv.DBOperationBatchSize(n))
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, op,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return span
}

// endSpan marks a failure by its type only: a Redis error text can quote
// the key it failed on, so only its leading code is kept.
func endSpan(span trace.Span, err error) {
	if err != nil && !rueidis.IsRedisNil(err) {
		et := semconv.ErrorType(err)
		if rerr, ok := rueidis.IsRedisErr(err); ok {
			et = semconv.ErrorTypeKey.String(errorCode(rerr.Error()))
		}
		span.SetAttributes(et)
		span.SetStatus(codes.Error, "redis command failed: "+et.Value.AsString())
	}
	span.End()
}

// errorCode is the first word of a Redis error reply when it is a code
// (upper-case letters, as WRONGTYPE or NOSCRIPT), else _OTHER.
func errorCode(msg string) string {
	code, _, _ := strings.Cut(msg, " ")
	if code == "" || len(code) > 32 || strings.ContainsFunc(code, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return semconv.ErrorTypeOther.Value.AsString()
	}
	return code
}

// command is the command's name, e.g. GET or EVALSHA: the first word,
// which comes from our code and never from data.
func command(words []string) string {
	if len(words) == 0 {
		return "UNKNOWN"
	}
	return strings.ToUpper(words[0][:min(len(words[0]), 16)])
}
