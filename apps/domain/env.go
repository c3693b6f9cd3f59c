package domain

import (
	"strings"

	"github.com/july/template/internal/envconf"
)

// Env declares a domain's own environment variables for one binary, the
// way the apps declare theirs: read at start-up with the apps' variables,
// one error per bad variable naming it (exit 2, as any configuration
// error), and listed by the binary's -h.
type Env struct {
	// Help lists the variables in the -h layout: two spaces, the name,
	// the meaning and the default, continuation lines indented deeper.
	Help string
	// Load reads the variables with r (r.URL, r.Int, r.Duration, ...:
	// they record the errors and never echo a URL or a secret) and
	// returns the parsed value, which the binary hands to the domain's
	// builder as APIDeps.Env or RelayDeps.Env. Nil: nothing to read.
	Load func(r *envconf.Reader) any
}

// Side names the binary a domain side runs in.
type Side int

const (
	// SideAPI is apps/api: Domain.APIEnv, APIDeps.Env.
	SideAPI Side = iota
	// SideRelay is apps/relay: Domain.RelayEnv, RelayDeps.Env.
	SideRelay
)

func (d Domain) env(s Side) Env {
	if s == SideAPI {
		return d.APIEnv
	}
	return d.RelayEnv
}

// Settings are the domains' loaded environments by domain name
// (LoadEnv), for BuildAPI and BuildRelay.
type Settings map[string]any

// LoadEnv reads every domain's environment for side s with r; the errors
// stay in r with the app's own (r.Err).
func LoadEnv(ds []Domain, s Side, r *envconf.Reader) Settings {
	out := Settings{}
	for _, d := range ds {
		if load := d.env(s).Load; load != nil {
			out[d.Name] = load(r)
		}
	}
	return out
}

// EnvHelp is the -h text of every domain's variables for side s, each
// domain's under a line naming it; "" when no domain declares any.
func EnvHelp(ds []Domain, s Side) string {
	var b strings.Builder
	for _, d := range ds {
		if h := d.env(s).Help; h != "" {
			b.WriteString("  domain " + d.Name + ":\n" + strings.TrimRight(h, "\n") + "\n")
		}
	}
	return b.String()
}
