package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/apitest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func validEnv() map[string]string {
	return map[string]string{
		"DATABASE_URL":    "postgres://postgres@127.0.0.1:5432/postgres",
		"REDIS_URL":       "redis://127.0.0.1:6379/0",
		"AUTH_JWT_SECRET": string(testSecret),
	}
}

func TestGraph(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(env(validEnv()))
	require.NoError(t, err)
	require.NoError(t, fx.ValidateApp(options(cfg, slog.Default())))
}

func TestConfig(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(env(validEnv()))
	require.NoError(t, err)
	require.Equal(t, ":8080", cfg.HTTPAddr)
	require.Equal(t, "127.0.0.1:9091", cfg.AdminAddr, "the admin port is loopback unless POD_IP or ADMIN_ADDR says otherwise")
	require.Equal(t, []byte(deriveHashKey(testSecret)), []byte(cfg.AccessLogHashKey))
	require.NotEqual(t, testSecret, []byte(cfg.AccessLogHashKey), "the hash key is not the signing key")
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		require.NotContains(t, s, string(testSecret), "config printing hides the secret")
	}

	tests := []struct {
		name  string
		set   map[string]string
		names []string
	}{
		{"secret missing", map[string]string{"AUTH_JWT_SECRET": ""}, []string{"AUTH_JWT_SECRET", "is required"}},
		{"secret short", map[string]string{"AUTH_JWT_SECRET": "hunter2-short"}, []string{"AUTH_JWT_SECRET", "32 bytes"}},
		{"hash key short", map[string]string{"ACCESS_LOG_HASH_KEY": "hunter2-short"}, []string{"ACCESS_LOG_HASH_KEY"}},
		{"bad addr and timeout", map[string]string{"HTTP_ADDR": "nope", "SHUTDOWN_TIMEOUT": "1ms"}, []string{"HTTP_ADDR", "SHUTDOWN_TIMEOUT"}},
		{"bad admin addr", map[string]string{"ADMIN_ADDR": "nope"}, []string{"ADMIN_ADDR"}},
		{"bad pod ip", map[string]string{"POD_IP": "$(POD_IP)"}, []string{"POD_IP"}},
		{"redis url", map[string]string{"REDIS_URL": "http://u:hunter2@x"}, []string{"REDIS_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := validEnv()
			for k, v := range tt.set {
				e[k] = v
			}
			var out, errOut bytes.Buffer
			code := run(t.Context(), nil, env(e), &out, &errOut)
			require.Equal(t, exitUsage, code, "env %v: %s", tt.set, errOut.String())
			for _, want := range tt.names {
				require.Contains(t, errOut.String(), want)
			}
			require.NotContains(t, errOut.String(), "hunter2", "values are never printed")
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, exitOK, run(t.Context(), []string{"--version"}, env(nil), &out, &out))
	require.Regexp(t, `^api \S+ \S+\nrevision `, out.String())
}

func TestHelp(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, exitOK, run(t.Context(), []string{"-h"}, env(nil), &out, &out))
	for _, want := range []string{"DATABASE_URL", "REDIS_URL", "LOG_LEVEL", "HTTP_ADDR", "ADMIN_ADDR", "else 127.0.0.1:9091", "AUTH_JWT_SECRET", "ACCESS_LOG_HASH_KEY", "SHUTDOWN_TIMEOUT", "api token", "GET /openapi.yaml", "--version"} {
		require.Contains(t, out.String(), want, "help must mention %s", want)
	}
	var errOut bytes.Buffer
	require.Equal(t, exitUsage, run(t.Context(), []string{"bogus"}, env(nil), &out, &errOut))
	require.Contains(t, errOut.String(), `unknown command "bogus"`)
}

func TestTokenCommand(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})

	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"token", "--sub", "cli-admin", "--roles", "ops, super_admin", "--ttl", "10m"}, env(validEnv()), &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	tok := strings.TrimSpace(out.String())
	res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keyFlag, Token: tok, Body: `{"value":true}`})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	r, _ := a.row(t, keyFlag)
	require.Equal(t, "cli-admin", r.UpdatedBy)

	out.Reset()
	code = run(t.Context(), []string{"token", "--sub", "viewer"}, env(validEnv()), &out, &errOut)
	require.Equal(t, exitOK, code)
	res = a.do(t, apitest.Request{Method: "GET", Path: configsPath + keyFlag, Token: strings.TrimSpace(out.String())})
	require.Equal(t, http.StatusForbidden, res.Status, "a token without roles authenticates but is not admin")

	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no secret", []string{"token", "--sub", "a"}, map[string]string{}, "AUTH_JWT_SECRET: is required"},
		{"short secret", []string{"token", "--sub", "a"}, map[string]string{"AUTH_JWT_SECRET": "hunter2"}, "shorter than 32 bytes"},
		{"no subject", []string{"token", "--roles", "super_admin"}, validEnv(), "--sub is required"},
		{"subject with a space", []string{"token", "--sub", "John Doe"}, validEnv(), "--sub must be"},
		{"bad ttl", []string{"token", "--sub", "a", "--ttl", "-1h"}, validEnv(), "--ttl must be positive"},
		{"unknown flag", []string{"token", "--sub", "a", "--role", "x"}, validEnv(), "flag provided but not defined"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(t.Context(), tt.args, env(tt.env), &out, &errOut)
		require.Equal(t, exitUsage, code, tt.name)
		require.Empty(t, out.String(), "%s: no token printed", tt.name)
		require.Contains(t, errOut.String(), tt.want, tt.name)
		require.NotContains(t, errOut.String(), "hunter2", tt.name)
	}
}
