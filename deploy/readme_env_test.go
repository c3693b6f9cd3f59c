package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeRow matches a row of a configuration table (docs/configuration.md's
// full one, the README's short one):
// | `NAME` | apps | default | meaning |
var readmeRow = regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]+)` \\| ([a-z, ]+) \\|")

// configTable reads the configuration table rows of a Markdown file
// (relative to deploy/): variable -> the apps its row names. The file must
// have a table.
func configTable(t *testing.T, path string) map[string][]string {
	t.Helper()
	rows := configRows(t, path)
	require.NotEmpty(t, rows, "%s has no configuration table", path)
	return rows
}

// configRows is configTable for a file that may have no table.
func configRows(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := readmeRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		require.NotContains(t, rows, m[1], "%s lists %s twice", path, m[1])
		apps := strings.Split(m[2], ",")
		if strings.TrimSpace(m[2]) == "all" {
			apps = []string{"api", "relay", "migrate"}
		}
		for _, a := range apps {
			rows[m[1]] = append(rows[m[1]], strings.TrimSpace(a))
		}
	}
	return rows
}

// TestReadmeConfigurationTableMatchesApps keeps the one full table of
// environment variables (docs/configuration.md) equal to what each app
// documents in `-h` (which TestAppsDocumentEnvironment ties to the code),
// and the README's short table a faithful excerpt of it.
func TestReadmeConfigurationTableMatchesApps(t *testing.T) {
	t.Parallel()

	full := configTable(t, "../docs/configuration.md")
	readme := map[string]map[string]bool{"api": {}, "relay": {}, "migrate": {}}
	for name, apps := range full {
		for _, a := range apps {
			require.Contains(t, readme, a, "docs/configuration.md row %s names an unknown app %q", name, a)
			readme[a][name] = true
		}
	}
	for app, want := range readme {
		got := documentedEnv(t, app)
		for name := range got {
			require.True(t, want[name], "%s -h documents %s but the configuration table (docs/configuration.md) does not list it for %s", app, name, app)
		}
		for name := range want {
			require.True(t, got[name], "docs/configuration.md lists %s for %s but `%s -h` does not document it", name, app, app)
		}
	}
	// A service's README (make new-service writes it) is its own: it may
	// leave the variables to docs/configuration.md.
	if _, err := os.Stat("../template.lock"); err == nil && len(configRows(t, "../README.md")) == 0 {
		return
	}
	for name, apps := range configTable(t, "../README.md") {
		want, ok := full[name]
		require.True(t, ok, "the README's configuration table lists %s, which docs/configuration.md does not", name)
		require.Equal(t, want, apps, "the README and docs/configuration.md name different apps for %s", name)
	}
}

// envName is an application variable as alert texts cite it.
var envName = regexp.MustCompile(`\b(?:RELAY|WORKER|DATABASE|REDIS|OUTBOX|ASYNQ|TASK|IDEMPOTENCY|HTTP|SHUTDOWN|MIGRATE)_[A-Z0-9_]+\b`)

// TestAlertsCiteRealVariables: an alert's advice to "raise RELAY_X" must
// name a variable the configuration table (docs/configuration.md) lists (an
// invented one sends the on-call engineer nowhere).
func TestAlertsCiteRealVariables(t *testing.T) {
	t.Parallel()

	known := map[string]bool{}
	for name := range configTable(t, "../docs/configuration.md") {
		known[name] = true
	}
	require.NotEmpty(t, known)
	files, err := filepath.Glob("prometheus/*.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, name := range envName.FindAllString(string(b), -1) {
			if strings.HasPrefix(name, "OUTBOX_") && !known[name] {
				continue // error codes (OUTBOX_LEASES_LOST) share the prefix
			}
			require.True(t, known[name], "%s cites %s, which the configuration table (docs/configuration.md) does not list", f, name)
		}
	}
}
