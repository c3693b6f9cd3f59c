package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// finding is the part of a govulncheck JSON "finding" message the policy
// reads. trace[0] is the vulnerable symbol; the last frame is the project's
// own code that reaches it.
type finding struct {
	OSV          string  `json:"osv"`
	FixedVersion string  `json:"fixed_version"`
	Trace        []frame `json:"trace"`
}

type frame struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Package  string `json:"package"`
	Function string `json:"function"`
	Receiver string `json:"receiver"`
}

type exception struct {
	ID     string
	Expiry time.Time
	Reason string
	// Production marks a reviewed acceptance of a finding in a production
	// binary: allowed only while no fixed version exists, for at most
	// maxProductionExpiry.
	Production bool
	line       int
}

// maxProductionExpiry bounds how far ahead a production acceptance may
// run, so a finding with no fix is looked at again each quarter.
const maxProductionExpiry = 92 * 24 * time.Hour

// cmdVulnPolicy applies the policy to govulncheck -format json output:
//   - a reachable (symbol-level) finding in a production binary fails,
//     and so does one in source mode whose entry is a package a binary
//     links; the one way past is a "production" exception for a
//     vulnerability that has no fixed version at all (reviewed, with the
//     mitigation as its reason, expiring within three months); once a fix
//     exists it fails again until the module is updated;
//   - any other reachable finding is test-only: it must be listed in the
//     exceptions file with a reason and an expiry date;
//   - an expired exception fails, whether or not it still matches.
//
// Findings that are only imported or only required (not reached) are
// counted, not judged: govulncheck itself says they need no action.
func cmdVulnPolicy(args []string) error {
	fs := flag.NewFlagSet("vulnpolicy", flag.ExitOnError)
	excPath := fs.String("exceptions", "", "exceptions file (ID YYYY-MM-DD reason)")
	prodPath := fs.String("prod", "", "file listing the packages the production binaries link (go list -deps)")
	today := fs.String("today", "", "date to judge expiry by (YYYY-MM-DD; default: today, UTC)")
	_ = fs.Parse(args)

	now := time.Now().UTC().Truncate(24 * time.Hour)
	if *today != "" {
		t, err := time.Parse(time.DateOnly, *today)
		if err != nil {
			return fmt.Errorf("-today: %w", err)
		}
		now = t
	}
	excs, err := readExceptions(*excPath)
	if err != nil {
		return err
	}
	prod := map[string]bool{}
	if *prodPath != "" {
		b, err := os.ReadFile(*prodPath)
		if err != nil {
			return err
		}
		for _, p := range strings.Fields(string(b)) {
			prod[p] = true
		}
	}

	var failures []string
	used := map[string]bool{}
	counts := map[string]int{}
	for _, arg := range fs.Args() {
		// Each argument is MODE:LABEL=FILE, e.g. binary:api=.cache/vuln/api.json.
		mode, rest, ok1 := strings.Cut(arg, ":")
		label, file, ok2 := strings.Cut(rest, "=")
		if !ok1 || !ok2 || (mode != "source" && mode != "binary") {
			return fmt.Errorf("argument %q: want source:LABEL=FILE or binary:LABEL=FILE", arg)
		}
		fds, err := readFindings(file)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		seen := map[string]bool{}
		for _, f := range fds {
			if len(f.Trace) == 0 || f.Trace[0].Function == "" {
				counts["not reached"]++
				continue
			}
			if seen[f.OSV] {
				continue // one line per vulnerability and scan; govulncheck may print several traces
			}
			seen[f.OSV] = true
			top, entry := f.Trace[0], f.Trace[len(f.Trace)-1]
			where := fmt.Sprintf("%s %s: %s %s@%s (fixed in %s) via %s", mode, label, f.OSV, top.Module, top.Version, orNone(f.FixedVersion), symbol(entry))
			inProd := mode == "binary" || prod[entry.Package]
			switch {
			case inProd:
				what := "FAIL reachable in production binary: "
				if mode != "binary" {
					what = "FAIL reachable from a package the binaries link: "
				}
				e, ok := excs[f.OSV]
				switch {
				case !ok || !e.Production:
					failures = append(failures, what+where)
				case f.FixedVersion != "":
					used[f.OSV] = true
					failures = append(failures, what+where+"\n     a fixed version exists now: update "+top.Module+" and drop the production exception")
				case e.Expiry.Before(now):
					used[f.OSV] = true // reported below with the other expired entries
				default:
					used[f.OSV] = true
					counts["accepted"]++
					fmt.Printf("ok   production, no fix exists, accepted until %s (%s): %s\n", e.Expiry.Format(time.DateOnly), e.Reason, where)
				}
			default:
				e, ok := excs[f.OSV]
				switch {
				case !ok:
					failures = append(failures, "FAIL test-only finding without an exception: "+where+
						"\n     add it to "+*excPath+" with a reason and an expiry date, or update "+top.Module)
				case e.Expiry.Before(now):
					// reported below with the other expired entries
					used[f.OSV] = true
				default:
					used[f.OSV] = true
					counts["excepted"]++
					fmt.Printf("ok   test-only, excepted until %s (%s): %s\n", e.Expiry.Format(time.DateOnly), e.Reason, where)
				}
			}
		}
	}
	ids := make([]string, 0, len(excs))
	for id := range excs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := excs[id]
		if e.Expiry.Before(now) {
			failures = append(failures, fmt.Sprintf("FAIL exception %s expired on %s (%s:%d): fix the finding or renew the exception with a new reason",
				id, e.Expiry.Format(time.DateOnly), *excPath, e.line))
		} else if e.Production && e.Expiry.Sub(now) > maxProductionExpiry {
			failures = append(failures, fmt.Sprintf("FAIL production exception %s runs to %s (%s:%d): accept a production finding for at most three months, then review it again",
				id, e.Expiry.Format(time.DateOnly), *excPath, e.line))
		} else if !used[id] {
			fmt.Printf("note exception %s matches no finding any more: remove it from %s\n", id, *excPath)
		}
	}
	fmt.Printf("vulnpolicy: %d accepted production findings without a fix, %d excepted test-only findings, %d imported or required but not reached, %d failures\n",
		counts["accepted"], counts["excepted"], counts["not reached"], len(failures))
	for _, f := range failures {
		fmt.Println(f)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d policy failure(s); see README \"Supply chain\"", len(failures))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "no fixed version"
	}
	return s
}

func symbol(f frame) string {
	s := f.Package + "."
	if f.Receiver != "" {
		s += f.Receiver + "."
	}
	return s + f.Function
}

// readFindings decodes govulncheck's JSON stream (a sequence of objects, one
// message each) and keeps the findings.
func readFindings(path string) ([]finding, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	dec := json.NewDecoder(fh)
	var out []finding
	sawConfig := false
	for {
		var msg struct {
			Config  json.RawMessage `json:"config"`
			Finding *finding        `json:"finding"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if msg.Config != nil {
			sawConfig = true
		}
		if msg.Finding != nil {
			out = append(out, *msg.Finding)
		}
	}
	if !sawConfig {
		return nil, errors.New("not govulncheck JSON output (no config message): did the scan run?")
	}
	return out, nil
}

// readExceptions reads "ID YYYY-MM-DD [production] reason..." lines; #
// starts a comment.
func readExceptions(path string) (map[string]exception, error) {
	out := map[string]exception{}
	if path == "" {
		return out, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Fields(line)
		if len(parts) < 3 {
			return nil, fmt.Errorf("%s:%d: want \"ID YYYY-MM-DD reason\", got %q", path, n, line)
		}
		exp, err := time.Parse(time.DateOnly, parts[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: expiry %q is not YYYY-MM-DD", path, n, parts[1])
		}
		if _, dup := out[parts[0]]; dup {
			return nil, fmt.Errorf("%s:%d: %s listed twice", path, n, parts[0])
		}
		e := exception{ID: parts[0], Expiry: exp, Reason: strings.Join(parts[2:], " "), line: n}
		if parts[2] == "production" {
			if len(parts) < 4 {
				return nil, fmt.Errorf("%s:%d: a production exception needs the mitigation as its reason: \"ID YYYY-MM-DD production reason\"", path, n)
			}
			e.Production, e.Reason = true, strings.Join(parts[3:], " ")
		}
		out[parts[0]] = e
	}
	return out, sc.Err()
}
