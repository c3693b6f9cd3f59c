// Package deploy holds no code, only the tests that keep deploy/ honest: the
// Dockerfile, the compose file and the Kubernetes manifests are parsed and
// checked against what the binaries really serve and read, and the three
// binaries are built the way the Dockerfile builds them.
package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// apps are the binaries under apps/ that ship as images.
var apps = []string{"api", "relay", "migrate"}

// goRuntimeEnv are variables read by the Go runtime rather than the apps;
// manifests may set them although no app's -h lists them.
var goRuntimeEnv = map[string]bool{"GOMEMLIMIT": true, "GOMAXPROCS": true, "GODEBUG": true}

// doc is one decoded YAML document.
type doc = map[string]any

// loadYAML decodes every document of a (multi-document) YAML file.
func loadYAML(t *testing.T, path string) []doc {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err, "open %s", path)
	defer f.Close()
	var docs []doc
	dec := yaml.NewDecoder(f)
	for {
		var d doc
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err, "%s: document %d does not parse", path, len(docs)+1)
		if d != nil {
			docs = append(docs, d)
		}
	}
}

// k8sObjects returns every object in deploy/k8s/base/*.yaml except the
// kustomization, keyed "Kind/name".
func k8sObjects(t *testing.T) map[string]doc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("k8s", "base", "*.yaml"))
	require.NoError(t, err)
	objs := map[string]doc{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		for _, d := range loadYAML(t, f) {
			key := str(d["kind"]) + "/" + str(get(d, "metadata", "name"))
			require.NotContains(t, objs, key, "%s: %s is defined twice", f, key)
			objs[key] = d
		}
	}
	return objs
}

// get walks nested maps by key; a missing step yields nil.
func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// list returns v as a slice of maps, skipping anything else.
func list(v any) []doc {
	items, _ := v.([]any)
	out := make([]doc, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// strs returns v as a slice of strings.
func strs(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, str(it))
	}
	return out
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// appOfImage maps an image reference ("template-api", "template-api:dev")
// to its app name, or "" for an image that is not one of ours.
func appOfImage(image string) string {
	name, _, _ := strings.Cut(image, ":")
	for _, a := range apps {
		if name == "template-"+a {
			return a
		}
	}
	return ""
}

// built holds the binaries built once per test run, the way the
// Dockerfile builds them.
var built struct {
	once sync.Once
	errs map[string]error
}

// buildDir is removed by TestMain.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploy-build-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy tests: create a temporary directory:", err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// binary returns the path of the app built with CGO_ENABLED=0 -trimpath
// from the repository root, with the workspace off and no VCS stamp (as in
// the image).
func binary(t *testing.T, app string) string {
	t.Helper()
	built.once.Do(func() {
		built.errs = map[string]error{}
		goBin, err := exec.LookPath("go")
		for _, a := range apps {
			if err != nil {
				built.errs[a] = fmt.Errorf("the go command is not on PATH (%w); install Go 1.26 or add its bin directory to PATH", err)
				continue
			}
			// The release builds' stamp (scripts/buildflags.sh), as make build,
			// the image and the supply chain link it.
			stamp, flagsErr := exec.Command("../scripts/buildflags.sh").Output()
			if flagsErr != nil {
				built.errs[a] = fmt.Errorf("scripts/buildflags.sh: %w", flagsErr)
				continue
			}
			cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w "+strings.TrimSpace(string(stamp)), "-o", filepath.Join(buildDir, a), "./apps/"+a)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-buildvcs=false")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if runErr := cmd.Run(); runErr != nil {
				built.errs[a] = fmt.Errorf("CGO_ENABLED=0 GOWORK=off go build ./apps/%s: %w\n%s", a, runErr, out.String())
			}
		}
	})
	require.NoError(t, built.errs[app])
	return filepath.Join(buildDir, app)
}

// envLine matches a variable in an app's -h "Environment:" section: exactly
// two spaces of indent, then the name (continuation lines indent deeper).
var envLine = regexp.MustCompile(`^  ([A-Z][A-Z0-9_]*)\s`)

// usage runs `<app> -h` and returns its text.
func usage(t *testing.T, app string) string {
	t.Helper()
	out, err := exec.Command(binary(t, app), "-h").Output()
	require.NoError(t, err, "%s -h must exit 0", app)
	return string(out)
}

// documentedEnv returns the variables listed in the "Environment:" section
// of `<app> -h`.
func documentedEnv(t *testing.T, app string) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	in := false
	for _, line := range strings.Split(usage(t, app), "\n") {
		switch {
		case strings.TrimSpace(line) == "Environment:":
			in = true
		case in && line != "" && !strings.HasPrefix(line, " "):
			in = false
		case in:
			if m := envLine.FindStringSubmatch(line); m != nil {
				vars[m[1]] = true
			}
		}
	}
	require.NotEmpty(t, vars, "%s -h has no Environment: section listing variables", app)
	return vars
}
