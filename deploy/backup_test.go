package deploy

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readKV reads key = value (postgresql.conf) or key=value (pgbackrest.conf)
// lines, by section ("" before the first [section]); comments and blank
// lines are skipped, quotes around a value removed.
func readKV(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]map[string]string{"": {}}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.Trim(line, "[]")
			out[section] = map[string]string{}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "%s: %q is not key=value", path, line)
		out[section][strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), "'")
	}
	require.NoError(t, sc.Err())
	return out
}

// The continuous-backup artefacts keep the promises docs/dr.md makes:
// every WAL segment goes to pgBackRest's stanza "main" within 30 s (the
// RPO target is a minute), the repository is encrypted and not a local
// directory of the database host, and no secret is in the files. `make
// dr-drill` runs a primary with these files and restores from them.
func TestBackupConfigKeepsTheRecoveryPromises(t *testing.T) {
	t.Parallel()
	pg := readKV(t, "postgres/archiving.conf")[""]
	require.Equal(t, "on", pg["archive_mode"])
	require.Contains(t, []string{"replica", "logical"}, pg["wal_level"])
	require.Equal(t, "pgbackrest --stanza=main archive-push %p", pg["archive_command"])
	timeout, err := time.ParseDuration(pg["archive_timeout"])
	require.NoError(t, err, "archive_timeout %q (write it with a unit, e.g. 30s)", pg["archive_timeout"])
	require.Positive(t, timeout)
	require.LessOrEqual(t, timeout, 30*time.Second, "archive_timeout bounds the RPO when the primary's disk is lost (docs/dr.md: 1 minute)")

	br := readKV(t, "postgres/pgbackrest.conf")
	g := br["global"]
	require.NotNil(t, g, "pgbackrest.conf has a [global] section")
	require.Equal(t, "aes-256-cbc", g["repo1-cipher-type"], "the repository is encrypted at rest")
	require.Contains(t, []string{"s3", "gcs", "azure", "sftp"}, g["repo1-type"], "the repository lives off the database host")
	require.NotEmpty(t, g["repo1-retention-full"])
	for k := range g {
		require.NotContains(t, []string{"repo1-cipher-pass", "repo1-s3-key", "repo1-s3-key-secret", "repo1-gcs-key", "repo1-azure-key"}, k,
			"secrets come from PGBACKREST_* environment variables, never the file")
	}
	require.Contains(t, br, "main", "the stanza archiving.conf and the runbook name")
	require.NotEmpty(t, br["main"]["pg1-path"])
}
