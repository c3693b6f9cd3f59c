package relay_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

// logSink collects JSON log lines.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// lines returns the decoded lines whose msg contains substr.
func (s *logSink) lines(t *testing.T, substr string) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(s.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q", line)
		if strings.Contains(m["msg"].(string), substr) {
			out = append(out, m)
		}
	}
	return out
}

// During a queue outage the relay cycles rows through failures; it logs
// one WARN when the outage starts and one when it ends, with counts, and
// no more than one start line per Config.OutageLogEvery.
func TestRelayLogsQueueOutageOnce(t *testing.T) {
	t.Parallel()

	sink := &logSink{}
	b := &testBundle{
		clock: &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		store: memory.NewOutboxStore(),
		pub:   memory.NewPublisher(),
		obs:   &observer{},
	}
	r, err := relay.New(b.store, b.pub, b.clock, relay.Config{
		Owner: "relay-outage", OutageLogEvery: time.Minute,
		Policy: outbox.Policy{MaxAttempts: 2, Backoff: outbox.Backoff{Base: time.Second, Max: time.Second}},
	}, relay.Options{Observer: b.obs, Logger: slog.New(slog.NewJSONHandler(sink, nil))})
	require.NoError(t, err)
	b.relay = r

	down := true
	b.pub.FailFunc = func(outbox.Envelope) error {
		if down {
			return errors.Join(outbox.Transient("QUEUE_UNAVAILABLE", "redis down"), ports.ErrUnavailable)
		}
		return nil
	}
	b.seed(t, 3)
	for range 5 { // five rounds of three failed attempts each
		b.drain(t)
		b.clock.Advance(2 * time.Second)
	}
	starts := sink.lines(t, "task queue unavailable")
	require.Len(t, starts, 1, "one start line per outage, however many attempts fail")
	require.Equal(t, "WARN", starts[0]["level"])
	require.EqualValues(t, 3, starts[0]["failed_attempts"], "the first batch's failures are counted")
	require.Empty(t, sink.lines(t, "task queue reachable again"), "no end line while the queue is down")
	retries := 0
	b.obs.mu.Lock()
	for _, res := range b.obs.results {
		retries += res.RetryCodes["QUEUE_UNAVAILABLE"]
	}
	b.obs.mu.Unlock()
	require.Equal(t, 15, retries, "retries are reported by error code")

	down = false
	b.drain(t)
	ends := sink.lines(t, "task queue reachable again")
	require.Len(t, ends, 1, "one end line when publishing works again")
	require.Equal(t, "WARN", ends[0]["level"])
	require.EqualValues(t, 15, ends[0]["failed_attempts"], "every failed attempt of the outage")
	require.Equal(t, "10s", ends[0]["duration"], "from the first failure to the first success")
	require.EqualValues(t, 3, ends[0]["delivered"])

	// A flap within OutageLogEvery of the last start line is not logged on
	// its own; the next logged line reports it.
	b.seed(t, 1)
	down = true
	b.drain(t)
	down = false
	b.clock.Advance(2 * time.Second)
	b.drain(t)
	require.Len(t, sink.lines(t, "task queue unavailable"), 1, "rate-limited: a second outage within a minute")
	require.Len(t, sink.lines(t, "task queue reachable again"), 1)

	b.clock.Advance(time.Minute)
	b.seed(t, 1)
	down = true
	b.drain(t)
	starts = sink.lines(t, "task queue unavailable")
	require.Len(t, starts, 2, "a minute later the next outage is logged")
	require.EqualValues(t, 1, starts[1]["unlogged_outages"], "the flap is reported")
	require.EqualValues(t, 1, starts[1]["unlogged_failed_attempts"])
}

// The relay reports each delivered event's delay from commit to enqueue.
func TestRelayReportsDeliveryLag(t *testing.T) {
	t.Parallel()

	b := setup(t, relay.Config{})
	b.seed(t, 2)
	b.clock.Advance(3 * time.Second)
	b.drain(t)
	b.obs.mu.Lock()
	defer b.obs.mu.Unlock()
	var lags []time.Duration
	for _, r := range b.obs.results {
		lags = append(lags, r.Lags...)
	}
	require.Equal(t, []time.Duration{3 * time.Second, 3 * time.Second}, lags, "now minus created_at per delivered event")
}
