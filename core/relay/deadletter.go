package relay

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
)

// DefaultDeadLetterTimeout bounds one Record's write. The recorder runs on
// a queue worker goroutine; a failure it could not write (the database is
// down) is logged at ERROR.
const DefaultDeadLetterTimeout = 5 * time.Second

// DeadLetterConfig tunes a DeadLetter. The zero value is valid.
type DeadLetterConfig struct {
	// Timeout bounds one Record. Default: DefaultDeadLetterTimeout.
	Timeout time.Duration
	// MarkedFunc is told the event type of every event it marked (a
	// metric); default: nothing.
	MarkedFunc func(eventType string)
}

// DeadLetter turns a consumer's final failure into a durable consumer
// failure record (outbox.ConsumerFailureRecord, beside the event's row,
// which stays delivered), so an operator finds and replays it after the queue's
// trimmed archive is gone.
type DeadLetter struct {
	store ports.ConsumerFailureStore
	clock ports.Clock
	cfg   DeadLetterConfig
	log   *slog.Logger
	red   redaction.Redactor
}

// NewDeadLetter returns a DeadLetter recording through store.
func NewDeadLetter(store ports.ConsumerFailureStore, clock ports.Clock, cfg DeadLetterConfig, log *slog.Logger) (*DeadLetter, error) {
	if store == nil || clock == nil {
		return nil, errors.New("relay: NewDeadLetter needs a consumer-failure store and a clock")
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultDeadLetterTimeout)
	if cfg.MarkedFunc == nil {
		cfg.MarkedFunc = func(string) {}
	}
	if log == nil {
		log = slog.Default()
	}
	return &DeadLetter{store: store, clock: clock, cfg: cfg, log: log}, nil
}

// Record marks the event eventID (the queue's task id), whatever its row's
// status, failed
// with code CONSUMER_FAILED and the redacted cause. Tasks that are not
// outbox events change nothing. It never returns an error: the outcome is
// logged, since the queue archives the task whatever happens here. ctx may
// already be cancelled (a handler timeout); Record runs on its own bound.
func (d *DeadLetter) Record(ctx context.Context, eventID, eventType string, cause error) {
	msg := outbox.SafeMessage(d.red.RedactText(cause.Error()))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	marked, err := d.store.MarkConsumerFailed(ctx, ports.ConsumerFailure{
		EventID: eventID, Code: outbox.ConsumerFailedCode, Message: msg, At: d.clock.Now(),
	})
	ids := []any{slog.String("event_id", eventID), slog.String("event_type", eventType)}
	attrs := append(ids, slog.String("error", msg))
	switch {
	case err != nil: // one error key: the consumer's failure, then why marking it failed
		d.log.ErrorContext(ctx, "outbox event failed in its consumer but could not be marked failed; only the queue's archive holds it",
			append(ids, slog.String("error", msg+"; marking it failed: "+d.red.RedactText(err.Error())))...)
	case marked:
		d.cfg.MarkedFunc(eventType)
		d.log.ErrorContext(ctx, "outbox event failed in its consumer; replay after fixing the cause",
			append(attrs, slog.String("error_code", outbox.ConsumerFailedCode))...)
	default:
		d.log.WarnContext(ctx, "task failed for good; no outbox event has its id (a plain task or a purged event), or its failure is already recorded", attrs...)
	}
}
