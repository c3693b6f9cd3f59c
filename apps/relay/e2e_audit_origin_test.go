package main_test

import (
	"encoding/json"
	"os"
	"os/user"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// REGRESSION: --operator and --reason are whatever the operator
// types; the audit record also keeps where the command ran, the OS user
// and host ("user@host"), and `relay audit list` shows it.
func TestE2EOperatorCommandsRecordTheirOrigin(t *testing.T) {
	t.Parallel()
	u, err := user.Current()
	require.NoError(t, err)
	host, err := os.Hostname()
	require.NoError(t, err)
	want := u.Username + "@" + host

	w := newWorld(t, "")
	_, errOut, code := w.runCLI("outbox", "replay", "--event-id", uuid.NewString(), "--operator", "origin-alice", "--reason", "retry")
	require.Equal(t, 0, code, "replay: %s", errOut)
	_, errOut, code = w.runCLI("outbox", "release-leases", "--owner", "relay-none/0", "--operator", "origin-bob", "--reason", "relay died")
	require.Equal(t, 0, code, "release-leases: %s", errOut)
	const events = `SELECT count(*) FROM tb_outbox_event WHERE event_type = 'audit.recorded' AND payload->>'actor' = ? AND payload->>'origin' = ?`
	require.Equal(t, 1, w.count(events, "origin-alice", want), "the replay's audit event carries the origin")
	require.Equal(t, 1, w.count(events, "origin-bob", want), "the release's audit event carries the origin")

	w.startRelay("relay-origin", "WORKER_ENABLED=true")
	const kept = `SELECT count(*) FROM tb_audit_record WHERE actor = ? AND origin = ?`
	w.waitCount(1, kept, "origin-alice", want)
	w.waitCount(1, kept, "origin-bob", want)

	out, errOut, code := w.runCLI("audit", "list", "--actor", "origin-alice")
	require.Equal(t, 0, code, "audit list: %s", errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, "a header and one record: %q", out)
	require.Contains(t, lines[0], "ORIGIN")
	require.Contains(t, lines[1], want)

	out, errOut, code = w.runCLI("audit", "list", "--actor", "origin-bob", "--json")
	require.Equal(t, 0, code, "audit list: %s", errOut)
	var entries []struct{ Actor, Origin string }
	require.NoError(t, json.Unmarshal([]byte(out), &entries), "audit list output: %s", out)
	require.Len(t, entries, 1, "%s", out)
	require.Equal(t, want, entries[0].Origin)
}
