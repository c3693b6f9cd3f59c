package deploy

import (
	"debug/elf"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppsBuildStatic builds the three binaries as the Dockerfile does and
// proves they are static: distroless/static has no libc to load.
func TestAppsBuildStatic(t *testing.T) {
	t.Parallel()
	for _, app := range apps {
		t.Run(app, func(t *testing.T) {
			t.Parallel()
			f, err := elf.Open(binary(t, app))
			require.NoError(t, err, "%s is not an ELF binary", app)
			defer f.Close()
			for _, p := range f.Progs {
				require.NotEqual(t, elf.PT_INTERP, p.Type, "%s asks for a dynamic loader; it must build with CGO_ENABLED=0", app)
			}
		})
	}
}

// TestAppsDocumentEnvironment guards the env check below: each -h lists
// the public environment variables it reads.
func TestAppsDocumentEnvironment(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"api":     {"DATABASE_URL", "REDIS_URL", "LOG_LEVEL", "HTTP_ADDR", "ADMIN_ADDR", "POD_IP", "AUTH_JWT_SECRET"},
		"relay":   {"DATABASE_URL", "REDIS_URL", "LOG_LEVEL", "ADMIN_ADDR"},
		"migrate": {"DATABASE_URL", "LOG_LEVEL"},
	}
	for app, vars := range want {
		t.Run(app, func(t *testing.T) {
			t.Parallel()
			doc := documentedEnv(t, app)
			for _, v := range vars {
				require.True(t, doc[v], "%s -h does not document %s (documented: %v)", app, v, doc)
			}
		})
	}
}

// TestVersionNamesTheCommit: a binary built as the releases are (without
// the repository's VCS stamp, as in the image) names the commit it was
// built from and the template version in --version.
func TestVersionNamesTheCommit(t *testing.T) {
	t.Parallel()
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err, "git rev-parse HEAD")
	commit := strings.TrimSpace(string(head))
	for _, app := range apps {
		t.Run(app, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(binary(t, app), "--version").CombinedOutput()
			require.NoError(t, err, "%s --version: %s", app, out)
			require.Contains(t, string(out), "\nrevision "+commit+"\n", "%s --version must name the commit it was built from", app)
			require.Regexp(t, `\ntemplate [0-9a-f]{7,}`, string(out), "%s --version must name the template version", app)
		})
	}
}
