package redaction_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

func TestSlogHelpers(t *testing.T) {
	t.Parallel()

	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: redaction.ReplaceAttr}))
	log.Info("login",
		"user", "alice",
		"dsn_password", "PLANTED1",
		"api", redaction.Secret("PLANTED2"),
		"header", "Bearer PLANTED3",
		slog.Group("session", "id", "PLANTED4"),
		slog.Group("req", "X-Api-Key", "PLANTED5", "path", "/a"),
	)
	out := buf.String()
	require.NotContains(t, out, plant, "log line %s", out)
	require.Contains(t, out, `"user":"alice"`)
	require.Contains(t, out, `"path":"/a"`)
	require.Contains(t, out, `"api":"[REDACTED]"`)
	require.Equal(t, redaction.Redacted, fmt.Sprint(redaction.Secret("PLANTED")))
}

// An access line's body text, already redacted, passes the root handler's
// ReplaceAttr unchanged: its "pay_url":"[REDACTED]" is no pair to redact.
func TestReplaceAttrKeepsRedactedText(t *testing.T) {
	t.Parallel()
	text := `{"order_no":"O-1","pay_url":"[REDACTED]","amount":5}`
	got := redaction.ReplaceAttr(nil, slog.String("text", text))
	require.Equal(t, text, got.Value.String())
	require.Equal(t, redaction.Redacted, redaction.ReplaceAttr(nil, slog.String("err", "dial: password=hunter2")).Value.String())
}

// A body a Redactor produced under a route's policy is logged as Clean and
// kept: a config listing's "key" members are readable under PolicyConfig,
// and ReplaceAttr reading the text again under PolicyDefault would wipe it.
// Its key and groups are still checked.
func TestReplaceAttrKeepsCleanText(t *testing.T) {
	t.Parallel()
	text := `{"items":[{"key":"relay.delivery.batch_size","value":100}]}`
	require.Equal(t, redaction.Redacted, redaction.ReplaceAttr(nil, slog.String("text", text)).Value.String(),
		"as a plain string the default policy reads \"key\" as a secret's name")

	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: redaction.ReplaceAttr}))
	log.Info("access", slog.Group("resp", slog.Any("text", redaction.Clean(text))),
		slog.Any("password", redaction.Clean("hunter2-hunter2")))
	var line struct {
		Resp     struct{ Text string }
		Password string
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
	require.Equal(t, text, line.Resp.Text, "rule: policy-redacted text is kept")
	require.Equal(t, redaction.Redacted, line.Password, "rule: a sensitive key is still redacted")
}

// An error logged as a value (slog.Any, or a bare err after its key) is
// text to slog's JSON handler, written without ReplaceAttr ever reading
// it; the root handler turns it into redacted text, and a string under
// "error" is cleaned the same way: the message stays, its secrets go.
func TestReplaceAttrRedactsErrors(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: redaction.ReplaceAttr}))
	cause := fmt.Errorf("connect postgres://app:PLANTED6@db:5432/app: %w", errors.New("dial tcp: refused"))
	log.Error("query failed", redaction.ErrorKey, cause)
	log.Error("query failed", slog.Any(redaction.ErrorKey, cause))
	log.Error("query failed", redaction.ErrorKey, "load user: password=PLANTED7 host=10.0.0.1")
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		msg, _ := rec[redaction.ErrorKey].(string)
		require.NotContains(t, msg, plant, "log line %s", line)
		require.NotEqual(t, redaction.Redacted, msg, "the message is kept, only its secret goes: %s", line)
		require.Regexp(t, `^(connect postgres://|load user: password=\[REDACTED\] host=10\.0\.0\.1)`, msg)
	}
}
