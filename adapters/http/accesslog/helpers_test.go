package accesslog_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
)

func newLogger(s *testinfra.LogBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// decoded re-encodes every line without HTML escaping, so a secret
// containing '&', '<' or '>' is searched for as written.
func decoded(t *testing.T, s *testinfra.LogBuffer) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, l := range s.Lines(t) {
		require.NoError(t, enc.Encode(l))
	}
	return b.String()
}

// line returns the log line with msg and request id.
func line(t *testing.T, s *testinfra.LogBuffer, msg, requestID string) map[string]any {
	t.Helper()
	for _, l := range s.Lines(t) {
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
