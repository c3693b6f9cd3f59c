package deploy

import (
	"os"
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
		re := regexp.MustCompile(`go build -trimpath [^&]*-o /out/` + app + ` \./apps/` + app + `\b`)
		require.Regexp(t, re, build, "builder must build ./apps/%s into /out/%s", app, app)
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
	require.Equal(t, "gcr.io/distroless/static-debian12:nonroot", last.base, "the default (last) stage must be distroless nonroot")
	for _, app := range apps {
		s, ok := byName[app]
		require.True(t, ok, "no stage named %q (docker build --target %s)", app, app)
		body := strings.Join(s.lines, "\n")
		require.Equal(t, "gcr.io/distroless/static-debian12:nonroot", s.base, "stage %s base", app)
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
