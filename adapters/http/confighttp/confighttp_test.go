package confighttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/confighttp"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// headerAuth is a test Authenticator: "X-Test-User: sub[,role...]".
type headerAuth struct{}

func (headerAuth) Authenticate(_ context.Context, r *http.Request) (auth.Principal, error) {
	h := r.Header.Get("X-Test-User")
	if h == "" {
		return auth.Principal{}, auth.ErrUnauthenticated
	}
	parts := strings.Split(h, ",")
	return auth.Principal{Subject: parts[0], Roles: parts[1:]}, nil
}

type bundle struct {
	url   string
	store *memory.ConfigStore
}

func i64(n int64) *int64 { return &n }

func setup(t *testing.T) bundle {
	t.Helper()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	reg := sysconfig.NewRegistry()
	require.NoError(t, reg.Register(
		sysconfig.Spec{Key: "pay.limit.daily", Module: "pay", Type: sysconfig.TypeInt, Default: "100", Min: i64(1), Max: i64(1000), Description: "每日限额"},
		sysconfig.Spec{Key: "pay.channel.code", Module: "pay", Type: sysconfig.TypeString, Default: "wx", ReadOnly: true, Description: "渠道代码"},
	))
	store := memory.NewConfigStore()
	svc, err := configsvc.New(reg, store, memory.NewConfigCache(func() time.Time { return now }),
		ports.ClockFunc(func() time.Time { return now }), configsvc.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	e := httpx.NewServer(httpx.ServerConfig{}, log, confighttp.MapError)
	confighttp.Register(e.Group("/api/v1", auth.Middleware(headerAuth{})), svc, log)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return bundle{url: srv.URL, store: store}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (b bundle) do(t *testing.T, method, path, user, body string, h ...string) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.url+path, r)
	require.NoError(t, err)
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	res, err := testClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{status: res.StatusCode, header: res.Header, body: string(data)}
}

func code(t *testing.T, r response) string {
	t.Helper()
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &env), "body %s", r.body)
	return env.Error.Code
}

const admin = "root,super_admin"

func TestStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path, user, body string
		headers                        []string
		status                         int
		code                           string
	}{
		{"list", "GET", "/api/v1/system-configs?module=pay", admin, "", nil, 200, ""},
		{"list bad module", "GET", "/api/v1/system-configs?module=Pay!", admin, "", nil, 400, httpx.CodeRequestInvalid},
		{"get", "GET", "/api/v1/system-configs/pay.limit.daily", admin, "", nil, 200, ""},
		{"get unregistered", "GET", "/api/v1/system-configs/pay.limit.none", admin, "", nil, 404, sysconfig.CodeKeyNotRegistered},
		{"get malformed key", "GET", "/api/v1/system-configs/PAY", admin, "", nil, 400, httpx.CodeRequestInvalid},
		{"anonymous existing", "GET", "/api/v1/system-configs/pay.limit.daily", "", "", nil, 401, httpx.CodeUnauthenticated},
		{"anonymous missing", "GET", "/api/v1/system-configs/pay.limit.none", "", "", nil, 401, httpx.CodeUnauthenticated},
		{"anonymous malformed", "PUT", "/api/v1/system-configs/PAY", "", `{"value":1}`, nil, 401, httpx.CodeUnauthenticated},
		{"no role list", "GET", "/api/v1/system-configs", "bob", "", nil, 403, httpx.CodeForbidden},
		{"no role missing key", "GET", "/api/v1/system-configs/pay.limit.none", "bob,ops", "", nil, 403, httpx.CodeForbidden},
		{"put", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5}`, nil, 200, ""},
		{"put range", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5000}`, nil, 422, sysconfig.CodeValueInvalid},
		{"put type", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":"5"}`, nil, 422, sysconfig.CodeValueInvalid},
		{"put null", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":null}`, nil, 422, sysconfig.CodeValueInvalid},
		{"put readonly", "PUT", "/api/v1/system-configs/pay.channel.code", admin, `{"value":"ali"}`, nil, 409, sysconfig.CodeReadOnly},
		{"put stale version", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5,"version":3}`, nil, 409, sysconfig.CodeVersionConflict},
		{"put stale if-match", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5}`, []string{"If-Match", `"3"`}, 409, sysconfig.CodeVersionConflict},
		{"put if-match zero", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5}`, []string{"If-Match", `"0"`}, 200, ""},
		{"put bad if-match", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5}`, []string{"If-Match", `W/"0"`}, 400, httpx.CodeRequestInvalid},
		{"put disagreeing versions", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5,"version":0}`, []string{"If-Match", `"1"`}, 400, httpx.CodeRequestInvalid},
		{"put no value", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"version":0}`, nil, 400, httpx.CodeRequestInvalid},
		{"put unknown field", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5,"extra":1}`, nil, 400, httpx.CodeRequestInvalid},
		{"put trailing data", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5} {}`, nil, 400, httpx.CodeRequestInvalid},
		{"put not json", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `value=5`, nil, 400, httpx.CodeRequestInvalid},
		{"put negative version", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5,"version":-1}`, nil, 400, httpx.CodeRequestInvalid},
		{"put form", "PUT", "/api/v1/system-configs/pay.limit.daily", admin, `{"value":5}`, []string{"Content-Type", "text/plain"}, 415, httpx.CodeUnsupportedMedia},
		{"put unregistered", "PUT", "/api/v1/system-configs/pay.limit.none", admin, `{"value":5}`, nil, 404, sysconfig.CodeKeyNotRegistered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			res := b.do(t, tt.method, tt.path, tt.user, tt.body, tt.headers...)
			require.Equal(t, tt.status, res.status, "%s %s %s: %s", tt.method, tt.path, tt.body, res.body)
			if tt.code != "" {
				require.Equal(t, tt.code, code(t, res), "%s %s: %s", tt.method, tt.path, res.body)
			}
		})
	}
}

func TestGetAndPutCarryETag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := "/api/v1/system-configs/pay.limit.daily"

	res := b.do(t, "GET", path, admin, "")
	require.Equal(t, `"0"`, res.header.Get("ETag"), "no row yet: version 0")
	require.Equal(t, "no-store", res.header.Get("Cache-Control"))

	res = b.do(t, "PUT", path, admin, `{"value":7}`, "If-Match", res.header.Get("ETag"))
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.Equal(t, `"1"`, res.header.Get("ETag"))
	var v sysconfig.View
	require.NoError(t, json.Unmarshal([]byte(res.body), &v))
	require.JSONEq(t, `7`, string(v.Value))
	require.Equal(t, "root", v.UpdatedBy)
}

func TestForbiddenPutIsAuditedWithoutLookup(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"pay.limit.daily", "pay.limit.none", "%E4%B8%AD"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			res := b.do(t, "PUT", "/api/v1/system-configs/"+key, "bob,ops", `{"value":5}`)
			require.Equal(t, http.StatusForbidden, res.status, res.body)
			audits := b.store.Audits()
			require.Len(t, audits, 1, "key %s", key)
			require.Equal(t, configsvc.CodeForbidden, audits[0].Code)
			require.Equal(t, "bob", audits[0].Actor)
			want := key
			if strings.HasPrefix(key, "%") {
				want = "invalid_key"
			}
			require.Equal(t, want, audits[0].ResourceID)
		})
	}
}

func TestMapError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err    error
		status int
		code   string
		field  string
	}{
		{fmt.Errorf("x: %w", sysconfig.ErrKeyNotRegistered), 404, sysconfig.CodeKeyNotRegistered, ""},
		{fmt.Errorf("x: %w", sysconfig.ErrReadOnly), 409, sysconfig.CodeReadOnly, ""},
		{&sysconfig.ValueError{Key: "a.b.c", Reason: "超出范围"}, 422, sysconfig.CodeValueInvalid, "value"},
		{&sysconfig.VersionConflictError{Key: "a.b.c", Expected: 1, Actual: 2}, 409, sysconfig.CodeVersionConflict, "version"},
	}
	for _, tt := range tests {
		e, ok := confighttp.MapError(tt.err)
		require.True(t, ok, "err %v", tt.err)
		require.Equal(t, tt.status, e.Status, "err %v", tt.err)
		require.Equal(t, tt.code, e.Code, "err %v", tt.err)
		require.False(t, e.Retryable, "err %v", tt.err)
		require.NotEmpty(t, e.Message, "err %v", tt.err)
		if tt.field != "" {
			require.Equal(t, tt.field, e.Details[0].Field, "err %v", tt.err)
		}
	}
	_, ok := confighttp.MapError(errors.New("other"))
	require.False(t, ok)
}
