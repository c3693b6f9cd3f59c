package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// cmdSBOMCheck checks that a CycloneDX JSON SBOM lists every module that
// `go version -m BINARY` reports (read from stdin), at the same version.
func cmdSBOMCheck(args []string) error {
	fs := flag.NewFlagSet("sbomcheck", flag.ExitOnError)
	sbom := fs.String("sbom", "", "CycloneDX JSON file")
	_ = fs.Parse(args)
	b, err := os.ReadFile(*sbom)
	if err != nil {
		return err
	}
	var doc struct {
		BOMFormat  string                        `json:"bomFormat"`
		Metadata   struct{ Component component } `json:"metadata"`
		Components []component                   `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", *sbom, err)
	}
	if doc.BOMFormat != "CycloneDX" {
		return fmt.Errorf("%s is not a CycloneDX SBOM", *sbom)
	}
	listed := map[string]bool{}
	var walk func(cs []component)
	walk = func(cs []component) {
		for _, c := range cs {
			listed[c.Name+"@"+c.Version] = true
			walk(c.Components)
		}
	}
	walk([]component{doc.Metadata.Component})
	walk(doc.Components)

	var missing []string
	n := 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		// go version -m lines: "\tdep\tPATH\tVERSION\tSUM", "\t=>\tPATH\tVERSION\tSUM" (a replacement).
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && (f[0] == "dep" || f[0] == "=>") {
			n++
			if !listed[f[1]+"@"+f[2]] {
				missing = append(missing, f[1]+"@"+f[2])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no dep lines on stdin: pipe `go version -m BINARY` in")
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		return fmt.Errorf("%s misses %d of the binary's %d modules: %s", *sbom, len(missing), n, strings.Join(missing, ", "))
	}
	fmt.Printf("sbomcheck: %s lists all %d modules of the binary\n", *sbom, n)
	return nil
}

type component struct {
	Name       string      `json:"name"`
	Version    string      `json:"version"`
	Components []component `json:"components"`
}
