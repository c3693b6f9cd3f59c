package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Kubernetes' recommended labels on every Deployment and its pods (never
// in the selector, which is immutable), GOMEMLIMIT at about 90 % of the
// memory limit, and the optional PodMonitor overlay scraping a port that
// exists.
func TestDeploymentsFollowKubernetesConventions(t *testing.T) {
	t.Parallel()
	objs := k8sObjects(t)
	deployments := map[string]doc{}
	for key, obj := range objs {
		if !strings.HasPrefix(key, "Deployment/") {
			continue
		}
		name := str(get(obj, "metadata", "name"))
		deployments[name] = obj
		for _, where := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
			labels, _ := get(obj, where...).(map[string]any)
			require.Equal(t, name, str(labels["app.kubernetes.io/name"]), "%s %v: app.kubernetes.io/name", key, where)
			require.Equal(t, name, str(labels["app.kubernetes.io/component"]), "%s %v: app.kubernetes.io/component", key, where)
		}
		sel, _ := get(obj, "spec", "selector", "matchLabels").(map[string]any)
		require.NotContains(t, sel, "app.kubernetes.io/component", "%s: the selector is immutable; keep new labels out of it", key)

		for _, c := range containers(obj) {
			limit := mebibytes(t, str(get(c, "resources", "limits", "memory")))
			var gomem string
			for _, e := range list(c["env"]) {
				if str(e["name"]) == "GOMEMLIMIT" {
					gomem = str(e["value"])
				}
			}
			require.NotEmpty(t, gomem, "%s/%s: GOMEMLIMIT is a literal (a resourceFieldRef can only give 100 %% of the limit)", key, c["name"])
			got := mebibytes(t, strings.TrimSuffix(gomem, "B"))
			require.InDelta(t, 0.9, got/limit, 0.05, "%s/%s: GOMEMLIMIT %s is not about 90 %% of the %gMi limit", key, c["name"], gomem, limit)
		}
	}
	require.Contains(t, deployments, "api")
	require.Contains(t, deployments, "relay")

	overlay := loadYAML(t, filepath.Join("k8s", "monitoring", "kustomization.yaml"))[0]
	require.ElementsMatch(t, []string{"../base", "podmonitor.yaml"}, strs(overlay["resources"]), "the overlay is the base plus the PodMonitors")
	monitors := loadYAML(t, filepath.Join("k8s", "monitoring", "podmonitor.yaml"))
	require.Len(t, monitors, len(deployments), "one PodMonitor per Deployment")
	for _, m := range monitors {
		require.Equal(t, "PodMonitor", str(m["kind"]))
		sel, _ := get(m, "spec", "selector", "matchLabels").(map[string]any)
		dep, ok := deployments[str(sel["app.kubernetes.io/name"])]
		require.True(t, ok, "PodMonitor %s selects no Deployment: %v", get(m, "metadata", "name"), sel)
		ports := map[string]bool{}
		for _, c := range containers(dep) {
			for _, p := range list(c["ports"]) {
				ports[str(p["name"])] = true
			}
		}
		for _, ep := range list(get(m, "spec", "podMetricsEndpoints")) {
			require.Equal(t, "admin", str(ep["port"]), "PodMonitor %s: /metrics is on the admin port", get(m, "metadata", "name"))
			require.True(t, ports["admin"], "PodMonitor %s scrapes a port its pods do not name", get(m, "metadata", "name"))
			require.Equal(t, "/metrics", str(ep["path"]))
		}
	}
}

// The OCI source label is a URL (registries and scanners link it).
func TestImageSourceLabelIsAURL(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	srcs := regexp.MustCompile(`org\.opencontainers\.image\.source="([^"]*)"`).FindAllStringSubmatch(string(b), -1)
	require.Len(t, srcs, 3, "one source label per image")
	for _, m := range srcs {
		require.Regexp(t, `^https://`, m[1], "org.opencontainers.image.source")
	}
}

// mebibytes reads a Kubernetes memory quantity in Mi or Gi (what the
// manifests use) as MiB.
func mebibytes(t *testing.T, q string) float64 {
	t.Helper()
	for suffix, f := range map[string]float64{"Mi": 1, "Gi": 1024} {
		if n, ok := strings.CutSuffix(q, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			require.NoError(t, err, "quantity %q", q)
			return v * f
		}
	}
	t.Fatalf("quantity %q: write it in Mi or Gi", q)
	return 0
}
