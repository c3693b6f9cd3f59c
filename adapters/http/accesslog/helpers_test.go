package accesslog_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// logSink is a concurrency-safe buffer behind a JSON slog handler.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func newLogger(s *logSink) *slog.Logger {
	return slog.New(slog.NewJSONHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lines decodes every log line.
func (s *logSink) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "log line %q", sc.Text())
		out = append(out, m)
	}
	return out
}

// decoded re-encodes every line without HTML escaping, so a secret
// containing '&', '<' or '>' is searched for as written.
func (s *logSink) decoded(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, l := range s.lines(t) {
		require.NoError(t, enc.Encode(l))
	}
	return b.String()
}

// line returns the log line with msg and request id.
func (s *logSink) line(t *testing.T, msg, requestID string) map[string]any {
	t.Helper()
	for _, l := range s.lines(t) {
		if l["msg"] == msg && l["request_id"] == requestID {
			return l
		}
	}
	require.FailNow(t, "no log line", "msg %q request_id %q in:\n%s", msg, requestID, s.String())
	return nil
}

// field walks a dotted path through a decoded line: "req.summary.size".
func field(l map[string]any, path string) any {
	var v any = l
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
