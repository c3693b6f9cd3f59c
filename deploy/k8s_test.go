package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// listener is a port an app serves and the variable that moves it.
type listener struct {
	addrVar string
	port    int
}

// probes is where each long-running app's Deployment probes /readyz and
// /healthz; scrapes is where Prometheus scrapes /metrics: always the admin
// listener (ADMIN_ADDR), never a port behind the Service.
var (
	probes = map[string]listener{
		"api":   {addrVar: "HTTP_ADDR", port: 8080},
		"relay": {addrVar: "ADMIN_ADDR", port: 9090},
	}
	scrapes = map[string]listener{
		"api":   {addrVar: "ADMIN_ADDR", port: 9091},
		"relay": {addrVar: "ADMIN_ADDR", port: 9090},
	}
)

// containers returns a pod template's init and main containers, in the
// order they run.
func containers(obj doc) []doc {
	spec := get(obj, "spec", "template", "spec")
	return append(list(get(spec, "initContainers")), list(get(spec, "containers"))...)
}

// envFiles maps each configMapGenerator name to its KEY=VALUE pairs.
func envFiles(t *testing.T) map[string]map[string]string {
	t.Helper()
	k := loadYAML(t, filepath.Join("k8s", "base", "kustomization.yaml"))[0]
	out := map[string]map[string]string{}
	for _, gen := range list(k["configMapGenerator"]) {
		vals := map[string]string{}
		for _, f := range strs(gen["envs"]) {
			fh, err := os.Open(filepath.Join("k8s", "base", f))
			require.NoError(t, err, "configMapGenerator %s", gen["name"])
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				key, val, ok := strings.Cut(line, "=")
				require.True(t, ok, "%s: %q is not KEY=VALUE", f, line)
				vals[key] = val
			}
			fh.Close()
		}
		out[str(gen["name"])] = vals
	}
	return out
}

// containerEnv returns the variables a container sees, explicit and via
// envFrom ConfigMaps, with literal values where known.
func containerEnv(t *testing.T, c doc, cms map[string]map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range list(c["envFrom"]) {
		name := str(get(from, "configMapRef", "name"))
		vals, ok := cms[name]
		require.True(t, ok, "container %s uses ConfigMap %q, which kustomization.yaml does not generate", c["name"], name)
		for k, v := range vals {
			env[k] = v
		}
	}
	for _, e := range list(c["env"]) {
		env[str(e["name"])] = str(e["value"])
	}
	return env
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	t.Parallel()
	k := loadYAML(t, filepath.Join("k8s", "base", "kustomization.yaml"))[0]
	res := strs(k["resources"])
	files, err := filepath.Glob(filepath.Join("k8s", "base", "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		base := filepath.Base(f)
		if base == "kustomization.yaml" || base == "secret.example.yaml" {
			continue
		}
		require.Contains(t, res, base, "%s is not listed in kustomization.yaml resources", f)
	}
	require.NotContains(t, res, "secret.example.yaml", "the placeholder Secret must never be applied over the real one")
	for _, r := range res {
		_, err := os.Stat(filepath.Join("k8s", "base", r))
		require.NoError(t, err, "kustomization.yaml lists %s", r)
	}
}

func TestDeploymentsProbeHealthEndpoints(t *testing.T) {
	t.Parallel()
	objs := k8sObjects(t)
	cms := envFiles(t)
	for _, app := range []string{"api", "relay"} {
		t.Run(app, func(t *testing.T) {
			t.Parallel()
			d, ok := objs["Deployment/"+app]
			require.True(t, ok, "no Deployment %q", app)
			cs := list(get(d, "spec", "template", "spec", "containers"))
			require.Len(t, cs, 1, "Deployment %s containers", app)
			c := cs[0]
			ports := map[string]int{}
			for _, p := range list(c["ports"]) {
				ports[str(p["name"])], _ = strconv.Atoi(str(p["containerPort"]))
			}
			resolve := func(port any) int {
				if n, err := strconv.Atoi(str(port)); err == nil {
					return n
				}
				return ports[str(port)]
			}
			want := probes[app]
			for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
				hg := get(c, probe, "httpGet")
				require.NotNil(t, hg, "Deployment %s has no %s.httpGet", app, probe)
				require.Equal(t, path, str(get(hg, "path")), "Deployment %s %s path", app, probe)
				require.Equal(t, want.port, resolve(get(hg, "port")), "Deployment %s %s port", app, probe)
			}
			env := containerEnv(t, c, cms)
			if addr, ok := env[want.addrVar]; ok && addr != "" {
				require.True(t, strings.HasSuffix(addr, ":"+strconv.Itoa(want.port)), "Deployment %s sets %s (%q) away from the probed port", app, want.addrVar, addr)
			}
			scrape := scrapes[app]
			if addr, ok := env[scrape.addrVar]; ok && addr != "" {
				require.True(t, strings.HasSuffix(addr, ":"+strconv.Itoa(scrape.port)), "Deployment %s sets %s (%q) away from the scraped port", app, scrape.addrVar, addr)
			} else {
				// The admin default is loopback unless POD_IP is set: a
				// scrape of the pod IP would find nothing listening.
				require.Contains(t, podIPEnv(c), "POD_IP", "Deployment %s: the admin listener defaults to loopback; set POD_IP from status.podIP (or %s)", app, scrape.addrVar)
			}
			require.Contains(t, ports, "admin", "Deployment %s names its admin port", app)
			require.Equal(t, scrape.port, ports["admin"], "Deployment %s admin containerPort", app)
			ann := get(d, "spec", "template", "metadata", "annotations")
			require.Equal(t, "true", str(get(ann, "prometheus.io/scrape")), "Deployment %s scrape annotation", app)
			require.Equal(t, strconv.Itoa(scrape.port), str(get(ann, "prometheus.io/port")), "Deployment %s scrape port", app)
			require.Equal(t, "/metrics", str(get(ann, "prometheus.io/path")), "Deployment %s scrape path", app)
		})
	}
}

// podIPEnv lists the container's variables set from the pod's IP
// (fieldRef status.podIP).
func podIPEnv(c doc) []string {
	var out []string
	for _, e := range list(c["env"]) {
		if str(get(e, "valueFrom", "fieldRef", "fieldPath")) == "status.podIP" {
			out = append(out, str(e["name"]))
		}
	}
	return out
}

// No Service exposes an admin port: /metrics stays off the path of
// clients and Ingresses (REGRESSION: the api served it behind its Service).
func TestServicesExposeNoAdminPort(t *testing.T) {
	t.Parallel()
	var services int
	for key, obj := range k8sObjects(t) {
		if !strings.HasPrefix(key, "Service/") {
			continue
		}
		services++
		for _, p := range list(get(obj, "spec", "ports")) {
			target := str(p["targetPort"])
			require.NotEqual(t, "admin", target, "%s exposes the admin port", key)
			for app, l := range scrapes {
				require.NotEqual(t, strconv.Itoa(l.port), target, "%s exposes %s's admin port", key, app)
			}
		}
	}
	require.Positive(t, services, "no Service found")
}

func TestPodsAreHardenedAndSized(t *testing.T) {
	t.Parallel()
	for key, obj := range k8sObjects(t) {
		if !strings.HasPrefix(key, "Deployment/") && !strings.HasPrefix(key, "Job/") {
			continue
		}
		pod := get(obj, "spec", "template", "spec")
		require.Equal(t, true, get(pod, "securityContext", "runAsNonRoot"), "%s: pod securityContext.runAsNonRoot", key)
		for _, c := range containers(obj) {
			require.NotNil(t, get(c, "resources", "requests", "cpu"), "%s/%s: resources.requests.cpu", key, c["name"])
			require.NotNil(t, get(c, "resources", "requests", "memory"), "%s/%s: resources.requests.memory", key, c["name"])
			require.NotNil(t, get(c, "resources", "limits", "memory"), "%s/%s: resources.limits.memory", key, c["name"])
			require.Equal(t, true, get(c, "securityContext", "readOnlyRootFilesystem"), "%s/%s: readOnlyRootFilesystem", key, c["name"])
			require.Equal(t, false, get(c, "securityContext", "allowPrivilegeEscalation"), "%s/%s: allowPrivilegeEscalation", key, c["name"])
		}
	}
}

func TestRelayRunsSeveralReplicas(t *testing.T) {
	t.Parallel()
	d := k8sObjects(t)["Deployment/relay"]
	n, err := strconv.Atoi(str(get(d, "spec", "replicas")))
	require.NoError(t, err, "Deployment relay spec.replicas")
	require.GreaterOrEqual(t, n, 2, "relay replicas")
}

func TestDisruptionBudgetsCoverAPIAndRelay(t *testing.T) {
	t.Parallel()
	objs := k8sObjects(t)
	for _, app := range []string{"api", "relay"} {
		var found bool
		for key, o := range objs {
			if !strings.HasPrefix(key, "PodDisruptionBudget/") {
				continue
			}
			if str(get(o, "spec", "selector", "matchLabels", "app.kubernetes.io/name")) == app {
				found = true
				require.Equal(t, "1", str(get(o, "spec", "minAvailable")), "%s minAvailable", key)
			}
		}
		require.True(t, found, "no PodDisruptionBudget selects app.kubernetes.io/name=%s", app)
	}
}

func TestMigrateJobChecksBeforeUp(t *testing.T) {
	t.Parallel()
	job, ok := k8sObjects(t)["Job/migrate"]
	require.True(t, ok, "no Job migrate")
	require.Equal(t, "0", str(get(job, "spec", "backoffLimit")), "a failed check must not be retried blindly")
	require.NotNil(t, get(job, "spec", "ttlSecondsAfterFinished"), "Job ttlSecondsAfterFinished")
	require.Equal(t, "release", str(get(job, "metadata", "labels", "app.kubernetes.io/component")),
		"deploy/README.md applies the Job alone with -l app.kubernetes.io/component=release")
	require.Equal(t, "Never", str(get(job, "spec", "template", "spec", "restartPolicy")))
	help := usage(t, "migrate")
	var cmds []string
	for _, c := range containers(job) {
		require.Equal(t, "migrate", appOfImage(str(c["image"])), "Job container %s image", c["name"])
		args := strs(c["args"])
		require.NotEmpty(t, args, "Job container %s has no args", c["name"])
		cmds = append(cmds, args[0])
		if args[0] == "backfill" {
			require.Len(t, args, 2, "backfill takes one name")
			require.Contains(t, help, args[1], "migrate -h does not list backfill %q", args[1])
		}
	}
	check, up := slices.Index(cmds, "check"), slices.Index(cmds, "up")
	require.True(t, check >= 0 && up > check, "Job must run check, then up; runs %v", cmds)
	require.Len(t, list(get(job, "spec", "template", "spec", "initContainers")), up+1,
		"check and up must be init containers so each stops the Job on failure; runs %v", cmds)
}

// TestManifestsUseOnlyDocumentedEnv keeps manifests from setting a variable
// no app reads: every name must appear in that app's -h, and every Secret
// key must exist in the example Secret.
func TestManifestsUseOnlyDocumentedEnv(t *testing.T) {
	t.Parallel()
	objs := k8sObjects(t)
	cms := envFiles(t)
	secret := get(objs["Secret/template-secrets"], "stringData")
	require.NotNil(t, secret, "secret.example.yaml must define Secret template-secrets with stringData")
	for key, obj := range objs {
		for _, c := range containers(obj) {
			app := appOfImage(str(c["image"]))
			require.NotEmpty(t, app, "%s/%s: image %q is not template-api|relay|migrate", key, c["name"], c["image"])
			doc := documentedEnv(t, app)
			for name := range containerEnv(t, c, cms) {
				require.True(t, doc[name] || goRuntimeEnv[name], "%s/%s sets %s, which `%s -h` does not document", key, c["name"], name, app)
			}
			for _, e := range list(c["env"]) {
				if ref := get(e, "valueFrom", "secretKeyRef"); ref != nil {
					require.Equal(t, "template-secrets", str(get(ref, "name")), "%s/%s %s", key, c["name"], e["name"])
					require.NotNil(t, get(secret, str(get(ref, "key"))), "%s/%s reads Secret key %v, missing from secret.example.yaml", key, c["name"], get(ref, "key"))
				}
			}
		}
	}
}

// REGRESSION: the relay's admin server (health, /metrics) must not
// listen on every interface, and its default without POD_IP (loopback)
// cannot be probed by the kubelet or scraped by Prometheus. The manifest
// sets POD_IP from the downward API, which makes the default POD_IP:9090.
func TestRelayAdminBindsThePodIP(t *testing.T) {
	t.Parallel()
	d := k8sObjects(t)["Deployment/relay"]
	c := list(get(d, "spec", "template", "spec", "containers"))[0]
	env := containerEnv(t, c, envFiles(t))
	addr, set := env["ADMIN_ADDR"]
	require.False(t, set && (addr == "" || strings.HasPrefix(addr, ":") || strings.HasPrefix(addr, "0.0.0.0:") || strings.HasPrefix(addr, "[::]:")),
		"ADMIN_ADDR %q listens on every interface", addr)
	var podIP bool
	for _, e := range list(c["env"]) {
		if str(e["name"]) == "POD_IP" {
			podIP = true
			require.Equal(t, "status.podIP", str(get(e, "valueFrom", "fieldRef", "fieldPath")), "POD_IP comes from the downward API")
		}
	}
	require.True(t, podIP || set, "the relay binds loopback unless POD_IP (or ADMIN_ADDR) is set; probes could not reach it")
}
