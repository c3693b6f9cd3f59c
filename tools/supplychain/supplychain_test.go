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
