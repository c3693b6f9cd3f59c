package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stage is one FROM section of the Dockerfile.
type stage struct {
	name, base string
	lines      []string
}

// dockerStages splits the Dockerfile into stages, joining continuation
// lines and dropping comments.
func dockerStages(t *testing.T) []stage {
	t.Helper()
	raw, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	var stages []stage
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if strings.EqualFold(f[0], "FROM") {
			s := stage{base: f[1]}
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				s.name = f[3]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
		}
	}
	require.NotEmpty(t, stages, "Dockerfile has no FROM")
	return stages
}

func TestDockerfileBuildsStaticBinaries(t *testing.T) {
	t.Parallel()
	stages := dockerStages(t)
	build := strings.Join(stages[0].lines, "\n")
	require.True(t, strings.HasPrefix(stages[0].base, "golang:"), "first stage %q must be the Go builder", stages[0].base)
	require.Regexp(t, `(?m)^ENV .*\bCGO_ENABLED=0\b`, build, "builder must set CGO_ENABLED=0")
	for _, app := range apps {
		re := regexp.MustCompile(`go build -trimpath -ldflags="\$flags" -o /out/` + app + ` \./apps/` + app + `\b`)
		require.Regexp(t, re, build, "builder must build ./apps/%s into /out/%s with the stamped flags", app, app)
	}
	// The stamp (--version, service_build_info): the context has no .git.
	for _, v := range []string{"version=${VERSION}", "commit=${VCS_REF}", "templateVersion="} {
		require.Contains(t, build, "-X $pkg."+v, "builder must stamp %s into the binaries", v)
	}
}

func TestDockerfileFinalStagesAreDistrolessNonroot(t *testing.T) {
	t.Parallel()
	stages := dockerStages(t)
	byName := map[string]stage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	last := stages[len(stages)-1]
	require.Equal(t, "gcr.io/distroless/static-debian13:nonroot", last.base, "the default (last) stage must be distroless nonroot")
	for _, app := range apps {
		s, ok := byName[app]
		require.True(t, ok, "no stage named %q (docker build --target %s)", app, app)
		body := strings.Join(s.lines, "\n")
		require.Equal(t, "gcr.io/distroless/static-debian13:nonroot", s.base, "stage %s base", app)
		require.Contains(t, body, "COPY --from=build /out/"+app+" /usr/local/bin/"+app, "stage %s", app)
		require.Contains(t, body, "USER nonroot:nonroot", "stage %s must not run as root", app)
		require.Contains(t, body, `ENTRYPOINT ["/usr/local/bin/`+app+`"]`, "stage %s", app)
	}
}

func TestDockerfileBakesNoSecrets(t *testing.T) {
	t.Parallel()
	secretish := regexp.MustCompile(`(?i)\b(ENV|ARG)\b.*(SECRET|PASSWORD|TOKEN|DATABASE_URL|REDIS_URL)`)
	for _, s := range dockerStages(t) {
		for _, line := range s.lines {
			require.NotRegexp(t, secretish, line, "stage %q bakes a secret-looking setting into the image", s.name)
		}
	}
}

// TestDockerfileBuildsOffline: the Dockerfile must build with the classic
// builder and with BuildKit without a registry or network beyond GOPROXY
// (scripts/check-images.sh builds it so). A `# syntax=` line makes BuildKit
// pull a frontend image; `RUN --mount` does not exist in the classic
// builder.
func TestDockerfileBuildsOffline(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	require.NotRegexp(t, `(?mi)^#\s*syntax\s*=`, string(raw), "no `# syntax=` directive: BuildKit would pull the frontend")
	stages := dockerStages(t)
	for _, s := range stages {
		for _, line := range s.lines {
			require.NotContains(t, line, "--mount", "stage %q: RUN --mount is BuildKit-only", s.name)
		}
	}
	require.Contains(t, strings.Join(stages[0].lines, "\n"), "ARG GOPROXY", "the builder takes GOPROXY as a build argument (off with a vendored context)")
}

// TestDockerignoreKeepsBuildInputs: every file `go build ./apps/...` reads
// from this module (Go files and //go:embed files) must reach the build
// context. .dockerignore once excluded docs/, whose openapi.yaml the api
// embeds, and no image could build.
func TestDockerignoreKeepsBuildInputs(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../.dockerignore")
	require.NoError(t, err)
	var patterns []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}{{end}}`,
		"../apps/...").Output()
	require.NoError(t, err, "go list the apps' files")
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	var n int
	for _, f := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		require.False(t, dockerignored(patterns, filepath.ToSlash(rel)), ".dockerignore excludes %s, which the images' build needs", rel)
		n++
	}
	require.Greater(t, n, 50, "expected the apps' source files")
}

// dockerignored applies .dockerignore rules as Docker does: a pattern
// matches a path or any of its parent directories, the last matching rule
// wins, and "!" re-includes.
func dockerignored(patterns []string, path string) bool {
	ignored := false
	parts := strings.Split(path, "/")
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/")
		for i := 1; i <= len(parts); i++ {
			if ok, _ := filepath.Match(p, strings.Join(parts[:i], "/")); ok {
				ignored = !neg
				break
			}
		}
	}
	return ignored
}

// TestDockerfileStampRunsWithoutLock runs the builder's stamping RUN under
// /bin/sh with a stub go, in a context with and without template.lock. The
// template has no lock, and `sed ... template.lock` exits 2 on a missing
// file, which once failed every image build of the template itself.
func TestDockerfileStampRunsWithoutLock(t *testing.T) {
	t.Parallel()
	var run string
	for _, line := range dockerStages(t)[0].lines {
		if strings.HasPrefix(line, "RUN ") && strings.Contains(line, "templateVersion=") {
			run = strings.TrimPrefix(line, "RUN ")
		}
	}
	require.NotEmpty(t, run, "the builder has no RUN that stamps templateVersion")
	bin := t.TempDir()
	log := filepath.Join(bin, "go.log")
	stub := "#!/bin/sh\nif [ \"$1\" = list ]; then echo example.com/svc; exit 0; fi\necho \"$*\" >>" + log + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(stub), 0o755))
	for name, lock := range map[string]string{"template": "", "service": "template_version = abc123\n"} {
		ctx := t.TempDir()
		if lock != "" {
			require.NoError(t, os.WriteFile(filepath.Join(ctx, "template.lock"), []byte(lock), 0o644))
		}
		require.NoError(t, os.WriteFile(log, nil, 0o644))
		cmd := exec.Command("/bin/sh", "-ec", run)
		cmd.Dir = ctx
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "VERSION=v1", "VCS_REF=deadbeef", "TEMPLATE_VERSION="}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s context: the stamping RUN failed: %s", name, out)
		builds, err := os.ReadFile(log)
		require.NoError(t, err)
		want := map[string]string{"template": "templateVersion=deadbeef", "service": "templateVersion=abc123"}[name]
		require.Equal(t, 3, strings.Count(string(builds), want), "%s context: want three builds stamped %s, got:\n%s", name, want, builds)
	}
}
