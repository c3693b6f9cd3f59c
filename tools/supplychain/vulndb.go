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

// osvEntry is the part of an OSV entry the index needs.
type osvEntry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
		Ranges []struct {
			Type   string `json:"type"`
			Events []struct {
				Introduced string `json:"introduced"`
				Fixed      string `json:"fixed"`
			} `json:"events"`
		} `json:"ranges"`
	} `json:"affected"`
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Fixed    string    `json:"fixed,omitempty"`
}

type moduleMeta struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

// cmdVulnDB writes govulncheck's v1 "file://" layout (index/db.json,
// index/modules.json, ID/<id>.json; plain JSON, which is what its local
// source reads) from a directory of OSV entries: golang.org/x/vulndb's
// data/osv. The output is built in a temporary directory and renamed into
// place, so a cut-short run never leaves a half database behind.
func cmdVulnDB(args []string) error {
	fs := flag.NewFlagSet("vulndb", flag.ExitOnError)
	src := fs.String("src", "", "directory of OSV entries (vulndb's data/osv)")
	out := fs.String("out", "", "database directory to create")
	_ = fs.Parse(args)
	if *src == "" || *out == "" {
		return errors.New("need -src and -out")
	}
	files, err := filepath.Glob(filepath.Join(*src, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no OSV entries in %s: is the vulndb module downloaded?", *src)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(*out), ".vulndb-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, d := range []string{"index", "ID"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return err
		}
	}
	var newest time.Time
	modules := map[string]*moduleMeta{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var e osvEntry
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if filepath.Base(f) != e.ID+".json" {
			return fmt.Errorf("%s: file name does not match id %q", f, e.ID)
		}
		if e.Modified.After(newest) {
			newest = e.Modified
		}
		for _, a := range e.Affected {
			m := modules[a.Package.Name]
			if m == nil {
				m = &moduleMeta{Path: a.Package.Name, Vulns: []moduleVuln{}}
				modules[a.Package.Name] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: e.Modified, Fixed: latestFix(a.Ranges)})
		}
		if err := os.WriteFile(filepath.Join(tmp, "ID", e.ID+".json"), b, 0o644); err != nil {
			return err
		}
	}
	list := make([]*moduleMeta, 0, len(modules))
	for _, m := range modules {
		list = append(list, m)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Path < list[j].Path })
	if err := writeJSON(filepath.Join(tmp, "index", "modules.json"), list); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(tmp, "index", "db.json"), map[string]time.Time{"modified": newest}); err != nil {
		return err
	}
	_ = os.RemoveAll(*out)
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	fmt.Printf("vulndb: %d entries, %d modules, modified %s -> %s\n", len(files), len(list), newest.Format(time.RFC3339), *out)
	return nil
}

// latestFix mirrors govulncheck's own index rule: the highest fixed version
// of the SEMVER ranges, or none when a later "introduced" re-opens it. The
// client fetches an entry when the module's version is below this fix (or
// there is none), so a wrong value here would hide findings.
func latestFix(ranges []struct {
	Type   string `json:"type"`
	Events []struct {
		Introduced string `json:"introduced"`
		Fixed      string `json:"fixed"`
	} `json:"events"`
}) string {
	less := func(a, b string) bool {
		if a == "" {
			return b != ""
		}
		return semver.Compare("v"+strings.TrimPrefix(a, "v"), "v"+strings.TrimPrefix(b, "v")) < 0
	}
	latest := ""
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		for _, e := range r.Events {
			if e.Fixed != "" && less(latest, e.Fixed) {
				latest = e.Fixed
			}
		}
		for _, e := range r.Events {
			if e.Introduced != "" && e.Introduced != "0" && less(latest, e.Introduced) {
				latest = ""
				break
			}
		}
	}
	return latest
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
