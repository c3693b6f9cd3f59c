package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// proposal is one step make deps-update proposes: a direct dependency from
// its current version to the newest release of the same major version.
type proposal struct {
	Path, From, To string
	// Kind is "patch" or "minor" ("minor (v0)" when a v0 minor, which
	// semver lets break the API).
	Kind string
	// Note carries what the proxy said besides the version: a retracted
	// current version, a deprecated module.
	Note string
}

// listedModule is the part of `go list -m -u -json all` a proposal needs.
type listedModule struct {
	Path       string
	Version    string
	Main       bool
	Indirect   bool
	Update     *struct{ Version string }
	Replace    *struct{ Path, Version string }
	Retracted  []string
	Deprecated string
	Error      *struct{ Err string }
}

// cmdDepsUpdate reads `go list -m -u -json all` (stdin) of the module whose
// go.mod is -gomod and prints one tab-separated line per proposal
// (path, from, to, kind, note): every direct dependency (a require line
// without // indirect, or the module of a `tool` directive's package) with
// a newer release in its major version. A new major version is a new module
// path, so it is never proposed; a pre-release is never proposed over a
// release.
func cmdDepsUpdate(args []string) error {
	fs := flag.NewFlagSet("depsupdate", flag.ExitOnError)
	gomod := fs.String("gomod", "go.mod", "the module's go.mod (its tool directives count as direct)")
	_ = fs.Parse(args)
	data, err := os.ReadFile(*gomod)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(*gomod, data, nil)
	if err != nil {
		return err
	}
	var tools []string
	for _, t := range f.Tool {
		tools = append(tools, t.Path)
	}
	ps, err := proposeUpdates(os.Stdin, tools)
	if err != nil {
		return err
	}
	for _, p := range ps {
		fmt.Printf("%s\t%s\t%s\t%s\t%s\n", p.Path, p.From, p.To, p.Kind, p.Note)
	}
	return nil
}

// proposeUpdates reads `go list -m -u -json all` and returns the proposals,
// sorted by path. tools are the packages of the go.mod's tool directives.
func proposeUpdates(r io.Reader, tools []string) ([]proposal, error) {
	dec := json.NewDecoder(r)
	var mods []listedModule
	for {
		var m listedModule
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	// A tool's module is the listed module with the longest path prefixing
	// the tool's package path.
	toolMods := map[string]bool{}
	for _, t := range tools {
		best := ""
		for _, m := range mods {
			if (t == m.Path || strings.HasPrefix(t, m.Path+"/")) && len(m.Path) > len(best) {
				best = m.Path
			}
		}
		if best != "" {
			toolMods[best] = true
		}
	}
	var out []proposal
	seen := map[string]bool{}
	for _, m := range mods {
		// A module replaced by a local directory (a workspace sibling) has
		// no version to move.
		if m.Main || seen[m.Path] || (m.Indirect && !toolMods[m.Path]) || (m.Replace != nil && m.Replace.Version == "") {
			continue
		}
		seen[m.Path] = true
		var notes []string
		if len(m.Retracted) > 0 {
			notes = append(notes, "current version retracted: "+strings.Join(m.Retracted, "; "))
		}
		if m.Deprecated != "" {
			notes = append(notes, "module deprecated: "+m.Deprecated)
		}
		if m.Error != nil {
			notes = append(notes, "proxy error: "+m.Error.Err)
		}
		if m.Update == nil || !semver.IsValid(m.Update.Version) || semver.Compare(m.Update.Version, m.Version) <= 0 ||
			semver.Major(m.Update.Version) != semver.Major(m.Version) ||
			(semver.Prerelease(m.Update.Version) != "" && semver.Prerelease(m.Version) == "") {
			if len(notes) > 0 { // nothing to move to, but the developer must hear it
				out = append(out, proposal{Path: m.Path, From: m.Version, To: m.Version, Kind: "none", Note: strings.Join(notes, "; ")})
			}
			continue
		}
		kind := "patch"
		if semver.MajorMinor(m.Update.Version) != semver.MajorMinor(m.Version) {
			kind = "minor"
			if semver.Major(m.Version) == "v0" {
				kind = "minor (v0)"
			}
		}
		out = append(out, proposal{Path: m.Path, From: m.Version, To: m.Update.Version, Kind: kind, Note: strings.Join(notes, "; ")})
	}
	for i := range out { // one line, one table cell each
		out[i].Note = strings.Join(strings.Fields(strings.ReplaceAll(out[i].Note, "|", "/")), " ")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
