package main_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// REGRESSION: --operator and --reason were stored verbatim, CR, LF
// and ESC included, and `relay audit list` printed them raw: a forged row
// in the listing, escape sequences in the auditor's terminal.
func TestE2EOperatorTextIsValidatedAndEscaped(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	const audits = `SELECT count(*) FROM tb_outbox_event WHERE event_type = 'audit.recorded'`
	id := uuid.NewString()
	for _, tc := range []struct{ flag, value string }{
		{"--operator", "alice\r\n2026-01-01T00:00:00Z  outbox.replay  root"},
		{"--operator", "alice\x1b[2J"},
		{"--reason", "fixed\n2026-01-01T00:00:00Z  config.update  admin"},
		{"--reason", "fixed \x1b]0;pwned\x07"},
		{"--reason", "fixed \u202egnp.exe"},
	} {
		args := []string{"outbox", "replay", "--event-id", id, "--operator", "alice", "--reason", "fixed"}
		for i, a := range args {
			if a == tc.flag {
				args[i+1] = tc.value
			}
		}
		_, errOut, code := w.runCLI(args...)
		require.Equal(t, 2, code, "%s %q is refused", tc.flag, tc.value)
		require.Contains(t, errOut, tc.flag+" is refused", "%q", tc.value)
		require.Contains(t, errOut, "control character")
		_, errOut, code = w.runCLI("outbox", "release-leases", tc.flag, tc.value, map[string]string{"--operator": "--reason", "--reason": "--operator"}[tc.flag], "x")
		require.Equal(t, 2, code, "release-leases %s %q is refused: %s", tc.flag, tc.value, errOut)
	}
	require.Zero(t, w.count(audits), "a refused command leaves no audit record")

	// Printable text is kept as typed, JSON and Chinese included.
	_, errOut, code := w.runCLI("outbox", "replay", "--event-id", id, "--operator", "alice", "--reason", `{"actor":"root"} 下游已修复`)
	require.Equal(t, 0, code, "replay: %s", errOut)
	require.Equal(t, 1, w.count(audits+` AND payload->>'reason' = '{"actor":"root"} 下游已修复'`))

	// Rows stored before the check (or by another writer) are escaped on
	// output, one line per record.
	_, err := w.db.Bun.ExecContext(t.Context(), `INSERT INTO tb_audit_record (event_id, action, actor, resource_type, resource_id,
		outcome, reason, recorded_at) VALUES (?::uuid, 'outbox.replay', 'mallory', 'outbox_batch', 'b-1', 'accepted', ?, now())`,
		uuid.NewString(), "ok\r\n2026-01-01T00:00:00Z  config.update  admin\x1b[31m\tred\u202e")
	require.NoError(t, err)
	out, errOut, code := w.runCLI("audit", "list", "--actor", "mallory")
	require.Equal(t, 0, code, "audit list: %s", errOut)
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "\r")
	require.NotContains(t, out, "\u202e")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, "a header and one record: %q", out)
	require.Contains(t, lines[1], `ok\r\n2026-01-01T00:00:00Z  config.update  admin\x1b[31m\tred\u202e`)
}

// REGRESSION: a replay that changed nothing was audited as accepted.
func TestE2EReplayThatChangedNothingIsAuditedAsNoop(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	_, errOut, code := w.runCLI("outbox", "replay", "--event-id", uuid.NewString(), "--operator", "alice", "--reason", "retry")
	require.Equal(t, 0, code, "replay: %s", errOut)
	_, errOut, code = w.runCLI("outbox", "release-leases", "--owner", "relay-none/0", "--operator", "bob", "--reason", "relay died")
	require.Equal(t, 0, code, "release-leases: %s", errOut)
	const q = `SELECT count(*) FROM tb_outbox_event WHERE event_type = 'audit.recorded' AND payload->>'action' = ? AND payload->>'outcome' = ?`
	require.Equal(t, 1, w.count(q, "outbox.replay", "noop"), "the replay skipped every event")
	require.Equal(t, 1, w.count(q, "outbox.release_leases", "noop"), "no lease was released")
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_event WHERE event_type = 'audit.recorded' AND payload->>'outcome' = 'accepted'`))
}
