package testinfra

import (
	"context"
	"errors"
	"testing"

	"github.com/hibiken/asynq"
)

// AsynqQueue returns an Asynq queue name unique to t on r's server and, at
// cleanup, deletes the queue and the keys asynq's DeleteQueue leaves behind
// (completed tasks, stats). Call it before starting workers on the queue:
// cleanups run last-registered first, so the workers stop before the queue
// is deleted.
func (r *Redis) AsynqQueue(t testing.TB, base string) string {
	t.Helper()
	q := r.QueueName(base)
	opt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		t.Fatalf("parse %s for asynq: %v", EnvRedisURL, err)
	}
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() {
		defer insp.Close()
		if err := insp.DeleteQueue(q, true); err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			t.Errorf("delete queue %s: %v", q, err)
		}
		if err := DeletePrefix(context.Background(), r.Client, "asynq:{"+q+"}"); err != nil {
			t.Errorf("delete keys of queue %s: %v", q, err)
		}
	})
	return q
}
