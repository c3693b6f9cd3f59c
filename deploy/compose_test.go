package deploy

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func composeServices(t *testing.T) map[string]any {
	t.Helper()
	docs := loadYAML(t, "docker-compose.yml")
	require.Len(t, docs, 1, "docker-compose.yml documents")
	svcs, ok := docs[0]["services"].(map[string]any)
	require.True(t, ok, "docker-compose.yml has no services")
	return svcs
}

// dependsOn returns a service's depends_on conditions by service.
func dependsOn(svc any) map[string]string {
	out := map[string]string{}
	deps, _ := get(svc, "depends_on").(map[string]any)
	for name, d := range deps {
		out[name] = str(get(d, "condition"))
	}
	return out
}

// completedAfter reports whether from waits, through a chain of
// service_completed_successfully dependencies, for target.
func completedAfter(svcs map[string]any, from, target string) bool {
	for dep, cond := range dependsOn(svcs[from]) {
		if cond != "service_completed_successfully" {
			continue
		}
		if dep == target || completedAfter(svcs, dep, target) {
			return true
		}
	}
	return false
}

func TestComposeStack(t *testing.T) {
	t.Parallel()
	svcs := composeServices(t)
	require.Equal(t, "postgres:15", str(get(svcs["postgres"], "image")))
	require.Equal(t, "redis:7", str(get(svcs["redis"], "image")))
	for _, s := range []string{"postgres", "redis"} {
		require.NotNil(t, get(svcs[s], "healthcheck"), "%s needs a healthcheck for depends_on service_healthy", s)
	}
	require.Equal(t, []string{"check"}, strs(get(svcs["migrate-check"], "command")))
	require.Equal(t, "service_healthy", dependsOn(svcs["migrate-check"])["postgres"], "migrate-check waits for postgres")
	require.Equal(t, []string{"up"}, strs(get(svcs["migrate"], "command")))
	require.True(t, completedAfter(svcs, "migrate", "migrate-check"), "migrate up runs only after check succeeded")
	for _, s := range []string{"api", "relay"} {
		require.True(t, completedAfter(svcs, s, "migrate"), "%s must start only after migrate completed successfully", s)
	}
	n, err := strconv.Atoi(str(get(svcs["relay"], "deploy", "replicas")))
	require.NoError(t, err, "relay deploy.replicas")
	require.GreaterOrEqual(t, n, 2, "relay replicas")
	secret := str(get(svcs["api"], "environment", "AUTH_JWT_SECRET"))
	require.Contains(t, secret, "dev-only", "the compose JWT secret must say it is dev-only")
}

// TestComposeUsesOnlyDocumentedEnv: our services set only variables their
// app's -h documents.
func TestComposeUsesOnlyDocumentedEnv(t *testing.T) {
	t.Parallel()
	var checked int
	for name, svc := range composeServices(t) {
		app := appOfImage(str(get(svc, "image")))
		if app == "" {
			continue
		}
		checked++
		require.Equal(t, app, str(get(svc, "build", "target")), "service %s builds the wrong target", name)
		doc := documentedEnv(t, app)
		env, _ := get(svc, "environment").(map[string]any)
		for k := range env {
			require.True(t, doc[k] || goRuntimeEnv[k], "compose service %s sets %s, which `%s -h` does not document", name, k, app)
		}
		require.False(t, strings.Contains(str(get(svc, "image")), "latest"), "service %s: pin a tag", name)
	}
	require.GreaterOrEqual(t, checked, 5, "expected migrate-check, migrate, migrate-seed, api and relay")
}

// TestEveryYAMLParses covers files no other test reads (alert rules).
func TestEveryYAMLParses(t *testing.T) {
	t.Parallel()
	var n int
	for _, pattern := range []string{"*.yml", "*.yaml", "*/*.yml", "*/*.yaml", "*/*/*.yml", "*/*/*.yaml"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			require.NotEmpty(t, loadYAML(t, f), "%s has no documents", f)
			n++
		}
	}
	require.GreaterOrEqual(t, n, 6, "expected compose, kustomization, manifests and alert rules")
}
