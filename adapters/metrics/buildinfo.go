package metrics

import "github.com/prometheus/client_golang/prometheus"

// BuildInfo is what the binary was built from (the apps fill it from the
// link-time stamp, appkit.BuildInfo).
type BuildInfo struct {
	Version, Commit, TemplateVersion, GoVersion string
}

// RegisterBuildInfo exports service_build_info{component,version,commit,
// template_version,go_version} 1, so a dashboard or an alert can tell which
// build (and which template version) each pod runs.
func RegisterBuildInfo(reg prometheus.Registerer, component Component, b BuildInfo) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "service_build_info",
		Help: "Always 1; the labels name the build: the service's version and commit, the template version and the Go version.",
		ConstLabels: prometheus.Labels{
			"component": string(component), "version": b.Version, "commit": b.Commit,
			"template_version": b.TemplateVersion, "go_version": b.GoVersion,
		},
	})
	g.Set(1)
	return reg.Register(g)
}
