package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLatestFixMatchesGovulncheckRule(t *testing.T) {
	var e osvEntry
	raw := `{"id":"X","affected":[
	  {"package":{"name":"a"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.2.0"},{"introduced":"1.3.0"},{"fixed":"1.3.4"}]}]},
	  {"package":{"name":"b"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.0.0"},{"introduced":"2.0.0"}]}]},
	  {"package":{"name":"c"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]}`
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		t.Fatal(err)
	}
	want := []string{"1.3.4", "", ""} // re-introduced after the last fix: no fix, so every version is checked
	for i, a := range e.Affected {
		if got := latestFix(a.Ranges); got != want[i] {
			t.Errorf("%s: latestFix = %q, want %q", a.Package.Name, got, want[i])
		}
	}
}

func TestLicensePolicyDeniesCopyleftAndUnlisted(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "p.txt")
	if err := os.WriteFile(policy, []byte("deny GPL-*\nallow MIT\noverride m/x MIT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	allow, deny, override, err := readLicensePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	if !denied("GPL-3.0", deny) || denied("MIT", deny) || !allow["MIT"] || allow["ISC"] {
		t.Errorf("policy read wrong: allow=%v deny=%v", allow, deny)
	}
	if strings.Join(override["m/x"], ",") != "MIT" {
		t.Errorf("override = %v", override)
	}
	if err := os.WriteFile(policy, []byte("deny GPL-*\nallow GPL-2.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := readLicensePolicy(policy); err == nil {
		t.Error("a license both allowed and denied was accepted")
	}
}

func TestExceptionsNeedReasonAndDate(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"GO-1 2027-01-01\n", "GO-1 soon because\n", "GO-1 2027-01-01 a\nGO-1 2027-01-01 b\n"} {
		p := filepath.Join(dir, "e.txt")
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readExceptions(p); err == nil {
			t.Errorf("exceptions %q accepted", bad)
		}
	}
}

// A production finding passes only under a production exception, only
// while no fix exists, and only within three months.
func TestProductionExceptionOnlyWithoutFix(t *testing.T) {
	dir := t.TempDir()
	finding := func(fixed string) string {
		p := filepath.Join(dir, "f"+fixed+".json")
		body := `{"config":{}}
{"finding":{"osv":"GO-9","fixed_version":"` + fixed + `","trace":[{"module":"m/x","version":"v1.0.0","package":"m/x","function":"F"},{"module":"app","package":"app","function":"main"}]}}`
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exc := func(line string) string {
		p := filepath.Join(dir, "e.txt")
		if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(excLine, fixed string) error {
		return cmdVulnPolicy([]string{"-exceptions", exc(excLine), "-today", "2026-12-01", "binary:api=" + finding(fixed)})
	}
	cases := []struct {
		name, exc, fixed string
		ok               bool
	}{
		{"production, no fix", "GO-9 2027-02-01 production IP taken from the socket only", "", true},
		{"test-only exception does not cover a binary", "GO-9 2027-02-01 test harness only", "", false},
		{"a fix exists", "GO-9 2027-02-01 production mitigated", "v1.0.1", false},
		{"expired", "GO-9 2026-11-30 production mitigated", "", false},
		{"longer than three months", "GO-9 2027-06-01 production mitigated", "", false},
	}
	for _, c := range cases {
		if err := run(c.exc, c.fixed); (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if _, err := readExceptions(exc("GO-9 2027-02-01 production")); err == nil {
		t.Error("a production exception without a reason was accepted")
	}
}

// make deps-update proposes the newest release of the same major version
// for direct dependencies (and tools) only, and says when a current
// version is retracted or a module deprecated.
func TestDepsUpdateProposesNextMinorOrPatchOfDirectDependencies(t *testing.T) {
	in := `
{"Path":"example.com/svc","Main":true}
{"Path":"example.com/patch","Version":"v1.2.3","Update":{"Version":"v1.2.5"}}
{"Path":"example.com/minor","Version":"v1.2.3","Update":{"Version":"v1.4.0"}}
{"Path":"example.com/zero","Version":"v0.3.6","Update":{"Version":"v0.31.0"}}
{"Path":"example.com/current","Version":"v2.0.1"}
{"Path":"example.com/indirect","Version":"v1.0.0","Indirect":true,"Update":{"Version":"v1.0.1"}}
{"Path":"example.com/tool","Version":"v1.0.0","Indirect":true,"Update":{"Version":"v1.1.0"}}
{"Path":"example.com/pre","Version":"v1.0.0","Update":{"Version":"v1.1.0-rc.1"}}
{"Path":"example.com/retracted","Version":"v1.0.0","Retracted":["broken build"],"Deprecated":"use example.com/other"}
{"Path":"example.com/patch","Version":"v1.2.3","Update":{"Version":"v1.2.5"}}
{"Path":"example.com/sibling","Version":"v0.0.0-00010101000000-000000000000","Replace":{"Path":"../.."},"Error":{"Err":"403"}}
{"Path":"example.com/gone","Version":"v1.0.0","Error":{"Err":"reading list: 403 Forbidden\n\tserver response: not | available"}}
`
	ps, err := proposeUpdates(strings.NewReader(in), []string{"example.com/tool/cmd/tool"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, strings.Join([]string{p.Path, p.From, p.To, p.Kind, p.Note}, " "))
	}
	want := []string{
		"example.com/gone v1.0.0 v1.0.0 none proxy error: reading list: 403 Forbidden server response: not / available",
		"example.com/minor v1.2.3 v1.4.0 minor ",
		"example.com/patch v1.2.3 v1.2.5 patch ",
		"example.com/retracted v1.0.0 v1.0.0 none current version retracted: broken build; module deprecated: use example.com/other",
		"example.com/tool v1.0.0 v1.1.0 minor ",
		"example.com/zero v0.3.6 v0.31.0 minor (v0) ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("proposals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The rescan of a recorded SBOM finds a module whose version an advisory's
// ranges contain, and nothing at or past the fix, through the same
// database layout the scan uses.
func TestSBOMScanFindsAffectedVersions(t *testing.T) {
	dir := t.TempDir()
	osv := filepath.Join(dir, "osv")
	if err := os.MkdirAll(osv, 0o755); err != nil {
		t.Fatal(err)
	}
	entries := map[string]string{
		"GO-1": `{"id":"GO-1","modified":"2026-01-01T00:00:00Z","affected":[{"package":{"name":"example.com/a"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.2.0"},{"introduced":"1.3.0"},{"fixed":"1.3.4"}]}]}]}`,
		"GO-2": `{"id":"GO-2","modified":"2026-01-01T00:00:00Z","affected":[{"package":{"name":"example.com/b"},"ranges":[{"type":"SEMVER","events":[{"introduced":"2.0.0"}]}]}]}`,
	}
	for id, e := range entries {
		if err := os.WriteFile(filepath.Join(osv, id+".json"), []byte(e), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "db")
	if err := cmdVulnDB([]string{"-src", osv, "-out", db}); err != nil {
		t.Fatal(err)
	}
	for mods, want := range map[string]string{
		"example.com/a@v1.1.9":                               "GO-1",
		"example.com/a@v1.2.0":                               "",
		"example.com/a@v1.3.3":                               "GO-1",
		"example.com/a@v1.3.4":                               "",
		"example.com/a@v1.2.1-0.20200101000000-abcdefabcdef": "",
		"example.com/b@v1.9.0":                               "",
		"example.com/b@v2.0.0":                               "GO-2",
		"example.com/c@v0.1.0":                               "",
	} {
		path, version, _ := strings.Cut(mods, "@")
		ms, err := matchModules(db, map[string]string{path: version})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.ID)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s: matches %v, want %q", mods, got, want)
		}
	}

	sbom := filepath.Join(dir, "x.cdx.json")
	if err := os.WriteFile(sbom, []byte(`{"bomFormat":"CycloneDX","metadata":{"component":{"name":"example.com/app","version":"v0.0.1"}},
	  "components":[{"name":"example.com/b","version":"v2.1.0"},{"name":"example.com/a","version":"v1.3.4"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmdSBOMScan([]string{"-db", db, sbom}); err != nil {
		t.Errorf("without -judge a match is listed, not failed: %v", err)
	}
	if err := cmdSBOMScan([]string{"-db", db, "-judge", sbom}); err == nil || !strings.Contains(err.Error(), "1 unexcepted") {
		t.Errorf("-judge: %v, want one failure", err)
	}
	exc := filepath.Join(dir, "exc.txt")
	if err := os.WriteFile(exc, []byte("GO-2 2999-01-01 reviewed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmdSBOMScan([]string{"-db", db, "-judge", "-exceptions", exc, sbom}); err != nil {
		t.Errorf("an excepted match failed: %v", err)
	}
}
