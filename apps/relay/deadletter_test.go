package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// fakeFailureStore marks an event once it has been Get'ed `delivering`
// times as Delivering (the relay marks it delivered meanwhile).
type fakeFailureStore struct {
	mu         sync.Mutex
	known      bool
	delivering int
	gets       int
	marked     []string // messages
	err        error
}

func (s *fakeFailureStore) MarkConsumerFailed(_ context.Context, _, code, msg string, _ time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil || !s.known || s.gets < s.delivering {
		return false, s.err
	}
	s.marked = append(s.marked, code+" "+msg)
	return true, nil
}

func (s *fakeFailureStore) Get(context.Context, string) (outbox.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.known {
		return outbox.Event{}, ports.ErrNotFound
	}
	s.gets++
	return outbox.Event{Status: outbox.Delivering}, nil
}

func TestDeadLetterFunc(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		store      *fakeFailureStore
		wantMarked int
		wantMsg    string
	}{
		{"Delivered", &fakeFailureStore{known: true}, 1, "outbox event failed in its consumer; replay after fixing the cause"},
		{"RelayNotMarkedYet", &fakeFailureStore{known: true, delivering: 2}, 1, "outbox event failed in its consumer; replay after fixing the cause"},
		{"PlainTask", &fakeFailureStore{}, 0, "no delivered outbox event has its id"},
		{"StoreDown", &fakeFailureStore{known: true, err: errors.New("db down")}, 0, "could not be marked failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var logs bytes.Buffer
			failures := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "f"}, []string{"event_type"})
			fn := newDeadLetterFunc(tt.store, ports.ClockFunc(time.Now), failures, slog.New(slog.NewJSONHandler(&logs, nil)))
			// A cancelled task context must not stop the mark.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			fn(ctx, asynq.NewTask("order.created", nil), errors.New("ORDER_UNKNOWN: token=abc.def.ghi"))

			require.Len(t, tt.store.marked, tt.wantMarked, "case %s", tt.name)
			for _, m := range tt.store.marked {
				require.Contains(t, m, outbox.ConsumerFailedCode+" ORDER_UNKNOWN")
				require.NotContains(t, m, "abc.def.ghi", "the stored message is redacted")
			}
			require.Equal(t, float64(tt.wantMarked), testutil.ToFloat64(failures.WithLabelValues("order.created")))
			require.Contains(t, logs.String(), tt.wantMsg, "case %s", tt.name)
		})
	}
}
