// Command supplychain holds the project's supply-chain checks: it builds the
// offline vulnerability database, applies the vulnerability policy to
// govulncheck's JSON, checks licenses, checks an SBOM against a binary,
// reports direct dependencies and proposes their next minor/patch versions,
// and matches a recorded SBOM against the database (the rescan). scripts/supply-chain.sh drives it; it lives in
// the tools module so none of its dependencies enter the service's go.mod.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "vulndb":
		err = cmdVulnDB(args)
	case "vulnpolicy":
		err = cmdVulnPolicy(args)
	case "licenses":
		err = cmdLicenses(args)
	case "sbomcheck":
		err = cmdSBOMCheck(args)
	case "depsreport":
		err = cmdDepsReport(args)
	case "depsupdate":
		err = cmdDepsUpdate(args)
	case "sbomscan":
		err = cmdSBOMScan(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "supplychain %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: supplychain vulndb|vulnpolicy|licenses|sbomcheck|depsreport|depsupdate|sbomscan [flags]")
	os.Exit(2)
}
