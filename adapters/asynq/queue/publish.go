package queue

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

var _ ports.Publisher = (*Publisher)(nil)

// Publish implements ports.Publisher. Each envelope becomes one task of type
// env.EventType with asynq task id env.EventID, whose payload is the
// envelope marshalled once (env.Payload is embedded as a JSON object, never
// Base64). Up to Config.PublishConcurrency envelopes are enqueued at once.
//
// errs[i] is nil when envs[i] was enqueued or asynq already holds a task
// with its event_id (a re-delivery absorbed). An envelope without
// event_id or event_type, or whose payload is not a JSON object, fails
// permanently with code ENVELOPE_INVALID; a Redis failure is an
// *UnavailableError (transient, wraps ports.ErrUnavailable).
func (e *Publisher) Publish(ctx context.Context, envs []outbox.Envelope) []error {
	errs := make([]error, len(envs))
	workers := min(e.cfg.PublishConcurrency, len(envs))
	if workers <= 1 {
		for i := range envs {
			errs[i] = e.publishOne(ctx, envs[i])
		}
		return errs
	}
	// A fixed pool pulling indexes keeps goroutines bounded without a
	// semaphore per envelope; each writes only its own errs slot.
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(envs) {
					return
				}
				errs[i] = e.publishOne(ctx, envs[i])
			}
		})
	}
	wg.Wait()
	return errs
}

func (e *Publisher) publishOne(ctx context.Context, env outbox.Envelope) error {
	if err := checkEnvelope(env); err != nil {
		return err
	}
	b, err := json.Marshal(env)
	if err != nil {
		return outbox.Permanent("ENVELOPE_INVALID", "event "+env.EventID+": envelope cannot be encoded as json; the stored payload is not valid json")
	}
	_, err = e.enqueue(ctx, asynq.NewTask(env.EventType, b), asynq.TaskID(env.EventID))
	switch {
	case err == nil, isDuplicate(err):
		return nil
	}
	return unavailable("publish event "+env.EventID, err)
}

// checkEnvelope refuses, permanently, an envelope consumers would refuse
// (outbox.Envelope.Validate): a blank event_id would also get a random task
// id from asynq, breaking deduplication, and a payload that is not an object
// is the double-marshalling regression.
func checkEnvelope(env outbox.Envelope) error {
	var ve *outbox.ValidationError
	if err := env.Validate(); errors.As(err, &ve) {
		// The field name only: the reason may quote the payload.
		return outbox.Permanent("ENVELOPE_INVALID", "event "+env.EventID+": invalid "+ve.Field+"; the envelope cannot be enqueued")
	}
	return nil
}
