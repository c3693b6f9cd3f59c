package queue

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

var _ ports.Publisher = (*Enqueuer)(nil)

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
func (e *Enqueuer) Publish(ctx context.Context, envs []outbox.Envelope) []error {
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

func (e *Enqueuer) publishOne(ctx context.Context, env outbox.Envelope) error {
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

// checkEnvelope refuses what asynq would misread: a blank event_id would
// get a random task id (breaking deduplication), a blank event_type is
// rejected by asynq with an untyped error, and a payload that is not an
// object is the double-marshalling regression consumers refuse anyway.
func checkEnvelope(env outbox.Envelope) error {
	switch {
	case strings.TrimSpace(env.EventID) == "":
		return outbox.Permanent("ENVELOPE_INVALID", "event_id is empty; every outbox event needs its uuid")
	case strings.TrimSpace(env.EventType) == "":
		return outbox.Permanent("ENVELOPE_INVALID", "event "+env.EventID+": event_type is empty")
	case !isObject(env.Payload):
		return outbox.Permanent("ENVELOPE_INVALID", "event "+env.EventID+": payload is not a json object; it may have been marshalled twice")
	}
	return nil
}

func isObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
