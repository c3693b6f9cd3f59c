package appkit

import (
	"fmt"
	"io"
	"runtime/debug"
)

// IsVersionFlag reports a request for the version: `--version`, `-version`
// or `version` as the only argument.
func IsVersionFlag(args []string) bool {
	return len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version")
}

// PrintVersion writes the binary's name, its module path and version and
// the VCS revision it was built from, as Go's build info records them
// (`go version -m bin/api` shows the same). A build outside a repository
// or with -buildvcs=false has no revision and says so.
func PrintVersion(w io.Writer, name string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintf(w, "%s: no build info (built without module support)\n", name)
		return
	}
	rev, modified, at := "unknown (built outside a repository or with -buildvcs=false)", "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		case "vcs.time":
			at = " " + s.Value
		}
	}
	fmt.Fprintf(w, "%s %s %s\nrevision %s%s%s\n%s\n", name, info.Main.Path, info.Main.Version, rev, modified, at, info.GoVersion)
}
