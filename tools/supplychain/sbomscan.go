package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// sbomMatch is a module an SBOM records at a version an advisory affects.
type sbomMatch struct {
	Module, Version, ID, Fixed string
}

// cmdSBOMScan matches the modules a recorded CycloneDX SBOM lists against a
// vulnerability database (the layout cmdVulnDB writes), without the binary
// or the source: the rescan of a kept artefact. A match is module-level (the
// version is affected; whether the code reaches the vulnerable symbol is the
// binary scan's question). With -judge, an SBOM whose binary was not kept
// fails on any match that tools/vuln-exceptions.txt does not except (an
// expired exception does not count); without it, matches are listed.
func cmdSBOMScan(args []string) error {
	fs := flag.NewFlagSet("sbomscan", flag.ExitOnError)
	db := fs.String("db", "", "vulnerability database directory (supplychain vulndb -out)")
	excPath := fs.String("exceptions", "", "exceptions file (ID YYYY-MM-DD reason); with -judge")
	judge := fs.Bool("judge", false, "fail on a match no exception covers")
	_ = fs.Parse(args)
	if *db == "" || fs.NArg() == 0 {
		return errors.New("need -db and at least one SBOM")
	}
	excs := map[string]exception{}
	if *excPath != "" {
		var err error
		if excs, err = readExceptions(*excPath); err != nil {
			return err
		}
	}
	now := time.Now().UTC().Truncate(24 * time.Hour)
	failures := 0
	for _, sbom := range fs.Args() {
		mods, err := sbomModules(sbom)
		if err != nil {
			return err
		}
		ms, err := matchModules(*db, mods)
		if err != nil {
			return err
		}
		for _, m := range ms {
			verdict := "note"
			if *judge {
				if e, ok := excs[m.ID]; ok && !e.Expiry.Before(now) {
					verdict = "ok  " // excepted
				} else {
					verdict = "FAIL"
					failures++
				}
			}
			fmt.Printf("%s sbom %s: %s %s@%s (fixed in %s), module-level\n", verdict, filepath.Base(sbom), m.ID, m.Module, m.Version, orNone(m.Fixed))
		}
		fmt.Printf("sbomscan: %s: %d modules, %d affected by a known vulnerability\n", filepath.Base(sbom), len(mods), len(ms))
	}
	if failures > 0 {
		return fmt.Errorf("%d unexcepted module-level finding(s) in SBOMs whose binary was not kept", failures)
	}
	return nil
}

// sbomModules returns module path -> version of every component of a
// CycloneDX JSON SBOM (the main module included).
func sbomModules(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		BOMFormat  string                        `json:"bomFormat"`
		Metadata   struct{ Component component } `json:"metadata"`
		Components []component                   `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if doc.BOMFormat != "CycloneDX" {
		return nil, fmt.Errorf("%s is not a CycloneDX SBOM", path)
	}
	mods := map[string]string{}
	var walk func(cs []component)
	walk = func(cs []component) {
		for _, c := range cs {
			if c.Name != "" && c.Version != "" {
				mods[c.Name] = c.Version
			}
			walk(c.Components)
		}
	}
	walk([]component{doc.Metadata.Component})
	walk(doc.Components)
	return mods, nil
}

// matchModules looks every module up in the database's index and returns
// the advisories whose ranges contain its version, sorted.
func matchModules(db string, mods map[string]string) ([]sbomMatch, error) {
	b, err := os.ReadFile(filepath.Join(db, "index", "modules.json"))
	if err != nil {
		return nil, err
	}
	var index []moduleMeta
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, err
	}
	var out []sbomMatch
	for _, m := range index {
		v, ok := mods[m.Path]
		if !ok || !semver.IsValid(v) {
			continue
		}
		for _, mv := range m.Vulns {
			if mv.Fixed != "" && semver.Compare(v, "v"+strings.TrimPrefix(mv.Fixed, "v")) >= 0 {
				continue // at or past the last fix: the index says no
			}
			eb, err := os.ReadFile(filepath.Join(db, "ID", mv.ID+".json"))
			if err != nil {
				return nil, err
			}
			var e osvEntry
			if err := json.Unmarshal(eb, &e); err != nil {
				return nil, fmt.Errorf("%s: %w", mv.ID, err)
			}
			for _, a := range e.Affected {
				if a.Package.Name == m.Path && affectedVersion(a.Ranges, v) {
					fixed := mv.Fixed
					if fixed != "" {
						fixed = "v" + strings.TrimPrefix(fixed, "v")
					}
					out = append(out, sbomMatch{Module: m.Path, Version: v, ID: e.ID, Fixed: fixed})
					break
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Module != out[j].Module {
			return out[i].Module < out[j].Module
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// affectedVersion reports whether v (a Go module version, "v1.2.3") lies in
// one of the SEMVER ranges: from an "introduced" up to, not including, the
// next "fixed" (OSV's rule; "0" introduces from the first version).
func affectedVersion(ranges []struct {
	Type   string `json:"type"`
	Events []struct {
		Introduced string `json:"introduced"`
		Fixed      string `json:"fixed"`
	} `json:"events"`
}, v string) bool {
	canon := func(s string) string { return "v" + strings.TrimPrefix(s, "v") }
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		in := false
		for _, e := range r.Events {
			switch {
			case e.Introduced == "0":
				in = true
			case e.Introduced != "" && semver.Compare(v, canon(e.Introduced)) >= 0:
				in = true
			case e.Fixed != "" && semver.Compare(v, canon(e.Fixed)) >= 0:
				in = false
			}
		}
		if in {
			return true
		}
	}
	return false
}
