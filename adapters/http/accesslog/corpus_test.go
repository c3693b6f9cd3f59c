package accesslog_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/redaction"

	"github.com/july/template/contracttests/testinfra"
)

var update = flag.Bool("update", false, "rewrite the corpus's expected log lines")

// corpusDir is core/redaction's corpus of real-world payloads.
const corpusDir = "../../../core/redaction/testdata/corpus"

// corpusCases say how each payload travels: the route (and so the
// policy) it is sent to, and whether it is the request or the response.
var corpusCases = []struct {
	file, route, ct string
	policy          redaction.Policy
	response        bool
}{
	{"wechatpay_notify.json", "/notify/wechatpay", "application/json", redaction.PolicyPayment, false},
	{"alipay_notify.form", "/notify/alipay", "application/x-www-form-urlencoded", redaction.PolicyPayment, false},
	{"wecom_callback.xml", "/callback/wecom", "text/xml", redaction.PolicyCallback, false},
	{"oauth_token.json", "/oauth/token", "application/json", redaction.PolicyLogin, true},
	{"login.form", "/login", "application/x-www-form-urlencoded", redaction.PolicyLogin, false},
	{"bank_card_bind.json", "/cards/bind", "application/json", redaction.PolicyPayment, false},
	{"csv_import_failures.json", "/tasks/failures", "application/json", redaction.PolicyDefault, true},
	{"short_passwords.json", "/pay/short", "application/json", redaction.PolicyPayment, false},
}

// TestCorpus sends each payload through the real HTTP stack, compares the
// access line with the expected one in <file>.want.json and greps the
// whole log for every value in <file>.secrets.
func TestCorpus(t *testing.T) {
	t.Parallel()
	logs := &testinfra.LogBuffer{}
	routes := map[string]accesslog.RoutePolicy{}
	for _, c := range corpusCases {
		routes[c.route] = accesslog.RoutePolicy{Policy: c.policy}
	}
	log := newLogger(logs)
	mw := accesslog.New(accesslog.Config{Logger: log, Redactor: &redaction.Redactor{HashKey: []byte("corpus-key")}, Routes: routes})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{mw}}, log)
	for _, c := range corpusCases {
		payload, err := os.ReadFile(filepath.Join(corpusDir, c.file))
		require.NoError(t, err)
		e.POST(c.route, func(ec echo.Context) error {
			if _, err := io.ReadAll(ec.Request().Body); err != nil {
				return err
			}
			if c.response {
				return ec.Blob(http.StatusOK, c.ct, payload)
			}
			return ec.JSON(http.StatusOK, map[string]any{"ok": true, "code": "SUCCESS"})
		})
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	for _, c := range corpusCases {
		payload, err := os.ReadFile(filepath.Join(corpusDir, c.file))
		require.NoError(t, err)
		body, ct := payload, c.ct
		if c.response {
			body, ct = []byte(`{"grant_type":"authorization_code"}`), "application/json"
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+c.route+"?page=1", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("User-Agent", "corpus/1.0")
		req.Header.Set(httpx.HeaderRequestID, "corpus-"+strings.TrimSuffix(c.file, filepath.Ext(c.file)))
		res, err := testClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, c.file)
	}

	all, dec := logs.String(), decoded(t, logs)
	for _, c := range corpusCases {
		t.Run(c.file, func(t *testing.T) {
			l := line(t, logs, "access", "corpus-"+strings.TrimSuffix(c.file, filepath.Ext(c.file)))
			for _, volatile := range []string{"time", "latency_ms", "ip"} {
				delete(l, volatile)
			}
			got, err := json.MarshalIndent(l, "", "  ")
			require.NoError(t, err)
			want := filepath.Join(corpusDir, c.file+".want.json")
			if *update {
				require.NoError(t, os.WriteFile(want, append(got, '\n'), 0o644))
			}
			exp, err := os.ReadFile(want)
			require.NoError(t, err, "run go test -run TestCorpus -update to create it")
			require.JSONEq(t, string(exp), string(got))

			secrets, err := os.ReadFile(filepath.Join(corpusDir, strings.TrimSuffix(c.file, filepath.Ext(c.file))+".secrets"))
			require.NoError(t, err)
			for s := range strings.SplitSeq(strings.TrimSpace(string(secrets)), "\n") {
				requireAbsent(t, all, s)
				requireAbsent(t, dec, s)
			}
		})
	}
}
