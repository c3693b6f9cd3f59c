package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
)

// cmdDepsReport reads `go list -m -u -json all` (stdin) and prints the direct
// dependencies with their current and latest versions (the proxy's answer).
func cmdDepsReport(args []string) error {
	fs := flag.NewFlagSet("depsreport", flag.ExitOnError)
	_ = fs.Parse(args)
	dec := json.NewDecoder(os.Stdin)
	type row struct{ path, cur, latest, note string }
	var rows []row
	seen := map[string]bool{}
	for {
		var m struct {
			Path     string
			Version  string
			Main     bool
			Indirect bool
			Update   *struct{ Version string }
			Error    *struct{ Err string }
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if m.Main || m.Indirect || seen[m.Path] {
			continue
		}
		seen[m.Path] = true
		r := row{path: m.Path, cur: m.Version, latest: m.Version, note: "up to date"}
		if m.Update != nil {
			r.latest, r.note = m.Update.Version, "update available"
		}
		if m.Error != nil {
			r.latest, r.note = "?", m.Error.Err
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].path < rows[j].path })
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODULE\tCURRENT\tLATEST\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.path, r.cur, r.latest, r.note)
	}
	return tw.Flush()
}
