package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeRow matches a row of the README's configuration table:
// | `NAME` | apps | default | meaning |
var readmeRow = regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]+)` \\| ([a-z, ]+) \\|")

// TestReadmeConfigurationTableMatchesApps keeps the README's one table of
// environment variables equal to what each app documents in `-h` (which
// TestAppsDocumentEnvironment ties to the code).
func TestReadmeConfigurationTableMatchesApps(t *testing.T) {
	t.Parallel()

	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := map[string]map[string]bool{"api": {}, "relay": {}, "migrate": {}}
	for _, line := range strings.Split(string(b), "\n") {
		m := readmeRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		apps := strings.Split(m[2], ",")
		if strings.TrimSpace(m[2]) == "all" {
			apps = []string{"api", "relay", "migrate"}
		}
		for _, a := range apps {
			a = strings.TrimSpace(a)
			require.Contains(t, readme, a, "README row %s names an unknown app %q", m[1], a)
			readme[a][m[1]] = true
		}
	}
	for app, want := range readme {
		got := documentedEnv(t, app)
		for name := range got {
			require.True(t, want[name], "%s -h documents %s but the README's configuration table does not list it for %s", app, name, app)
		}
		for name := range want {
			require.True(t, got[name], "the README lists %s for %s but `%s -h` does not document it", name, app, app)
		}
	}
}

// envName is an application variable as alert texts cite it.
var envName = regexp.MustCompile(`\b(?:RELAY|WORKER|DATABASE|REDIS|OUTBOX|ASYNQ|TASK|IDEMPOTENCY|HTTP|SHUTDOWN|MIGRATE)_[A-Z0-9_]+\b`)

// TestAlertsCiteRealVariables: an alert's advice to "raise RELAY_X" must
// name a variable the README's configuration table lists (an invented one
// sends the on-call engineer nowhere).
func TestAlertsCiteRealVariables(t *testing.T) {
	t.Parallel()

	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	known := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		if m := readmeRow.FindStringSubmatch(line); m != nil {
			known[m[1]] = true
		}
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
			require.True(t, known[name], "%s cites %s, which the README's configuration table does not list", f, name)
		}
	}
}
