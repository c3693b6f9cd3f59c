package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/licensecheck"
)

// cmdLicenses classifies the license of every module named on stdin
// ("path version dir" lines, from go list -deps -test) by reading its
// LICENSE/COPYING/NOTICE files in the module cache with licensecheck, writes
// a TSV report, and fails on a denied license, on a license not in the allow
// list, and on a module whose license it cannot find. All of it is offline.
func cmdLicenses(args []string) error {
	fs := flag.NewFlagSet("licenses", flag.ExitOnError)
	policy := fs.String("policy", "", "policy file: \"allow ID\" and \"deny ID-or-prefix*\" lines")
	report := fs.String("report", "", "TSV report to write (module, version, licenses, verdict)")
	_ = fs.Parse(args)
	allow, deny, override, err := readLicensePolicy(*policy)
	if err != nil {
		return err
	}
	type mod struct{ path, version, dir string }
	mods := map[string]mod{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 { // main modules have no version: they are ours
			continue
		}
		mods[f[0]+"@"+f[1]] = mod{f[0], f[1], f[2]}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(mods) == 0 {
		return fmt.Errorf("no modules on stdin")
	}
	keys := make([]string, 0, len(mods))
	for k := range mods {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	var out strings.Builder
	out.WriteString("module\tversion\tlicenses\tverdict\n")
	var failures []string
	inUse := map[string]int{}
	for _, k := range keys {
		m := mods[k]
		ids, err := moduleLicenses(m.dir)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if o, ok := override[m.path]; ok {
			ids = o
		}
		verdict := "ok"
		if len(ids) == 0 {
			verdict = "FAIL no license file found in " + m.dir
		}
		for _, id := range ids {
			inUse[id]++
			switch {
			case denied(id, deny):
				verdict = "FAIL denied license " + id
			case !allow[id] && verdict == "ok":
				verdict = "FAIL license " + id + " is not in the allow list: review it, then add it to " + *policy
			}
		}
		if verdict != "ok" {
			failures = append(failures, k+": "+verdict)
		}
		fmt.Fprintf(&out, "%s\t%s\t%s\t%s\n", m.path, m.version, strings.Join(ids, ","), verdict)
	}
	if *report != "" {
		if err := os.WriteFile(*report, []byte(out.String()), 0o644); err != nil {
			return err
		}
	}
	var summary []string
	for id, n := range inUse {
		summary = append(summary, fmt.Sprintf("%s %d", id, n))
	}
	sort.Strings(summary)
	fmt.Printf("licenses: %d modules (%s); report %s\n", len(keys), strings.Join(summary, ", "), *report)
	for _, f := range failures {
		fmt.Println("FAIL", f)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d module(s) fail the license policy", len(failures))
	}
	return nil
}

// moduleLicenses returns the license ids found in the module root's license
// files. A match must cover most of the file, so a README that merely
// mentions "MIT" is not taken for a license.
func moduleLicenses(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("module source not in the module cache (run go mod download): %w", err)
	}
	set := map[string]bool{}
	for _, e := range entries {
		n := strings.ToUpper(e.Name())
		if e.IsDir() || !(strings.HasPrefix(n, "LICENSE") || strings.HasPrefix(n, "LICENCE") || strings.HasPrefix(n, "COPYING")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		cov := licensecheck.Scan(b)
		if cov.Percent < 75 {
			set["UNKNOWN("+e.Name()+")"] = true
			continue
		}
		for _, m := range cov.Match {
			if !m.IsURL {
				set[m.ID] = true
			}
		}
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

func denied(id string, deny []string) bool {
	for _, d := range deny {
		if p, ok := strings.CutSuffix(d, "*"); ok && strings.HasPrefix(id, p) || id == d {
			return true
		}
	}
	return false
}

// readLicensePolicy reads "allow ID", "deny ID-or-prefix*" and
// "override MODULE ID[,ID]" lines. An override replaces what the scan found
// for one module, for a reviewed case such as a docs-only license file.
func readLicensePolicy(path string) (allow map[string]bool, deny []string, override map[string][]string, err error) {
	if path == "" {
		return nil, nil, nil, fmt.Errorf("need -policy")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	allow = map[string]bool{}
	override = map[string][]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case len(f) == 2 && f[0] == "allow":
			allow[f[1]] = true
		case len(f) == 2 && f[0] == "deny":
			deny = append(deny, f[1])
		case len(f) == 3 && f[0] == "override":
			override[f[1]] = strings.Split(f[2], ",")
		default:
			return nil, nil, nil, fmt.Errorf("%s:%d: want \"allow ID\", \"deny ID\" or \"override MODULE ID\", got %q", path, i+1, line)
		}
	}
	for id := range allow {
		if denied(id, deny) {
			return nil, nil, nil, fmt.Errorf("%s: %s is both allowed and denied", path, id)
		}
	}
	return allow, deny, override, nil
}
