package accesslog_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/core/redaction"

	"github.com/july/template/contracttests/testinfra"
)

// panicking is a redactor with a bug: it panics, quoting the body.
type panicking struct{}

func (panicking) Summarise(_ redaction.Policy, b redaction.Body) redaction.Result {
	panic("redactor bug near " + string(b.Data))
}

func (panicking) RedactQueryFor(_ redaction.Policy, _ *redaction.Fields, q string) string {
	panic("redactor bug near " + q)
}

func (panicking) RedactTextFor(_ redaction.Policy, _ *redaction.Fields, s string) string {
	panic("redactor bug near " + s)
}

func (panicking) RedactMessageFor(_ redaction.Policy, _ *redaction.Fields, s string) string {
	panic("redactor bug near " + s)
}

// leaky is a redactor with a worse bug: it returns the raw body in an
// inconsistent result and the raw query.
type leaky struct{}

func (leaky) Summarise(_ redaction.Policy, b redaction.Body) redaction.Result {
	return redaction.Result{Mode: redaction.ModeSummary, Text: string(b.Data), Summary: &redaction.Summary{}}
}

func (leaky) RedactQueryFor(_ redaction.Policy, _ *redaction.Fields, q string) string {
	panic("cannot parse " + q)
}

func (leaky) RedactTextFor(_ redaction.Policy, _ *redaction.Fields, s string) string {
	panic("cannot parse " + s)
}

func (leaky) RedactMessageFor(_ redaction.Policy, _ *redaction.Fields, s string) string { return s }

func TestRedactionFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		red  accesslog.Redactor
	}{
		{"redactor panics", panicking{}},
		{"redactor returns an inconsistent result", leaky{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.red)
			body := []byte(`{"note":"x","password":"` + password + `"}`)
			status, resp := b.send(t, request{id: "case-redaction-fails", method: "POST", ct: "application/json",
				path: "/api/v1/login?access_token=" + access, body: body})
			require.Equal(t, http.StatusOK, status, "a logging failure must not fail the request")
			require.Contains(t, string(resp), access, "the client still gets its response")

			requireAbsent(t, b.logs.String(), password)
			requireAbsent(t, b.logs.String(), access)
			requireAbsent(t, b.logs.String(), "redactor bug")
			require.Equal(t, 4.0, counterValue(t, b.failures), "query, user agent, request and response each failed")

			var parts []string
			for _, l := range b.logs.Lines(t) {
				if l["msg"] == "access log redaction failed" {
					require.Equal(t, "WARN", l["level"])
					require.Equal(t, accesslog.CodeRedactionFailed, l["code"])
					require.Equal(t, "case-redaction-fails", l["request_id"])
					require.Equal(t, "/api/v1/login", l["path"])
					parts = append(parts, l["part"].(string))
				}
			}
			require.ElementsMatch(t, []string{"query", "user_agent", "req", "resp"}, parts)

			l := line(t, b.logs, "access", "case-redaction-fails")
			require.Equal(t, "", l["query"])
			for _, part := range []string{"req", "resp"} {
				require.Equal(t, "summary", field(l, part+".mode"), "%s of %v", part, l)
				require.Nil(t, field(l, part+".text"), "%s of %v", part, l)
				require.Equal(t, "application/json", field(l, part+".summary.content_type"))
			}
			require.Equal(t, float64(len(body)), field(l, "req.summary.size"))
		})
	}
}

func TestSkip(t *testing.T) {
	t.Parallel()
	logs := &testinfra.LogBuffer{}
	e := newServer(accesslog.Config{Logger: newLogger(logs), Skip: func(c echoContext) bool { return c.Path() == "/healthz" }})
	for _, path := range []string{"/healthz", "/readyz"} {
		status, _ := serve(e, http.MethodGet, path, "", nil)
		require.Equal(t, http.StatusOK, status, "GET %s", path)
	}
	var routes []any
	for _, l := range logs.Lines(t) {
		routes = append(routes, l["route"])
	}
	require.Equal(t, []any{"/readyz"}, routes)
}
