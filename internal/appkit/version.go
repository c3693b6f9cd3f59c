package appkit

import (
	"fmt"
	"io"
	"runtime/debug"
)

// Set at link time by the builds (make build, deploy/Dockerfile,
// scripts/supply-chain.sh) through scripts/buildflags.sh:
//
//	-X <module>/internal/appkit.version=...
//
// Images build without the repository (-buildvcs=false), so Go's own VCS
// stamp is empty there and these are the only record of the source.
var (
	version         string
	commit          string
	templateVersion string
)

// Build names what a binary was built from.
type Build struct {
	Module          string // the service's module path
	Version         string // the service's version (git describe)
	Commit          string // the service's commit
	Modified        bool   // built from a tree with uncommitted changes (Go's VCS stamp only)
	TemplateVersion string // the template commit the service is on (template.lock; the template's own commit in the template)
	GoVersion       string
}

// BuildInfo returns the stamped values, else what Go's build info records
// (a `go build` inside a checkout stamps the revision), else "unknown".
func BuildInfo() Build {
	b := Build{Version: version, Commit: commit, TemplateVersion: templateVersion}
	if info, ok := debug.ReadBuildInfo(); ok {
		b.Module, b.GoVersion = info.Main.Path, info.GoVersion
		if b.Version == "" && info.Main.Version != "" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	for _, v := range []*string{&b.Version, &b.Commit, &b.TemplateVersion, &b.GoVersion} {
		if *v == "" {
			*v = "unknown"
		}
	}
	return b
}

// IsVersionFlag reports a request for the version: `--version`, `-version`
// or `version` as the only argument.
func IsVersionFlag(args []string) bool {
	return len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version")
}

// PrintVersion writes the binary's name, the service's module path and
// version, its commit, the template version and the Go version. An
// unstamped build outside a repository says "unknown".
func PrintVersion(w io.Writer, name string) {
	b := BuildInfo()
	modified := ""
	if b.Modified {
		modified = " (modified)"
	}
	fmt.Fprintf(w, "%s %s %s\nrevision %s%s\ntemplate %s\n%s\n", name, b.Module, b.Version, b.Commit, modified, b.TemplateVersion, b.GoVersion)
}
