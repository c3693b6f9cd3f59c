package main

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
)

// A taken HTTP_ADDR or ADMIN_ADDR fails the start at once with one JSON log line that
// names the cause and the variable to change (make run prints it).
func TestStartFailureIsOneJSONLine(t *testing.T) {
	t.Parallel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })

	e := validEnv()
	e["DATABASE_URL"] = testinfra.NewDB(t, testinfra.DBOpts{}).URL
	e["REDIS_URL"] = testinfra.NewRedis(t).URL
	for _, v := range []string{"HTTP_ADDR", "ADMIN_ADDR"} {
		e["HTTP_ADDR"], e["ADMIN_ADDR"] = "127.0.0.1:0", "127.0.0.1:0"
		e[v] = ln.Addr().String()
		var out, errOut bytes.Buffer
		code := run(t.Context(), nil, env(e), &out, &errOut)
		require.Equal(t, exitError, code, errOut.String())

		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		require.Len(t, lines, 1, "one line on stderr: %s", errOut.String())
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &line), "a JSON line: %s", lines[0])
		require.Equal(t, "ERROR", line["level"])
		require.Contains(t, line["error"], "address already in use")
		require.Contains(t, line["hint"], "set "+v+" to a free address", "the hint names the taken listener's variable")
	}
}

// A configuration error is a JSON line too, and still names the variable.
func TestConfigurationFailureIsJSON(t *testing.T) {
	t.Parallel()

	e := validEnv()
	e["AUTH_JWT_SECRET"] = ""
	var out, errOut bytes.Buffer
	require.Equal(t, exitUsage, run(t.Context(), nil, env(e), &out, &errOut))
	var line map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(errOut.Bytes()), &line), errOut.String())
	require.Equal(t, "ERROR", line["level"])
	require.Contains(t, line["error"], "AUTH_JWT_SECRET")
}

// Every way the Postgres pool can fail to open is one JSON line that names
// the dependency, the variable and what to do, without the wiring (fx's
// dependency chain) that led to the pool, and without the password.
func TestPostgresStartFailureIsASentence(t *testing.T) {
	t.Parallel()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{})
	for name, c := range map[string]struct{ url, hint string }{
		"refused":     {"postgres://app:hunter2@127.0.0.1:1/app?sslmode=disable", "start Postgres"},
		"no database": {strings.Replace(tdb.URL, tdb.Name, tdb.Name+"_missing", 1), "CREATE DATABASE"},
	} {
		e := validEnv()
		e["DATABASE_URL"] = c.url
		e["REDIS_URL"] = testinfra.NewRedis(t).URL
		e["HTTP_ADDR"], e["ADMIN_ADDR"] = "127.0.0.1:0", "127.0.0.1:0"
		var out, errOut bytes.Buffer
		require.Equal(t, exitError, run(t.Context(), nil, env(e), &out, &errOut), name)
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		require.Len(t, lines, 1, "%s: one line on stderr: %s", name, errOut.String())
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &line), "%s: a JSON line: %s", name, lines[0])
		require.Equal(t, "ERROR", line["level"])
		require.Equal(t, "api: did not start", line["msg"])
		require.Equal(t, "postgres", line["dependency"])
		require.Equal(t, "DATABASE_URL", line["variable"])
		require.Contains(t, line["hint"], c.hint, name)
		require.Contains(t, line["hint"], "DATABASE_URL", name)
		for _, wiring := range []string{"could not build", "failed to build", "fx.", "reflect", "hunter2"} {
			require.NotContains(t, lines[0], wiring, name)
		}
	}
}
