package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/july/template/adapters/http/auth"
)

// tokenCommand prints a bearer token for local development and tests. It
// signs with the same AUTH_JWT_SECRET the server verifies with.
func tokenCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("api token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sub := fs.String("sub", "", "subject (user id) of the token (required)")
	roles := fs.String("roles", "", "comma-separated roles, e.g. super_admin")
	ttl := fs.Duration("ttl", time.Hour, "validity, e.g. 30m or 8h")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *sub == "" || *ttl <= 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "api token: --sub is required, --ttl must be positive and no other arguments are accepted")
		fs.Usage()
		return exitUsage
	}
	if err := auth.ValidateSubject(*sub); err != nil {
		fmt.Fprintf(stderr, "api token: --sub must be %s (the API refuses other subjects with 401 TOKEN_SUBJECT_INVALID)\n", auth.SubjectFormat)
		return exitUsage
	}
	key, err := readSecret(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "api token: %v\n", err)
		return exitUsage
	}
	var list []string
	for r := range strings.SplitSeq(*roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			list = append(list, r)
		}
	}
	tok, err := auth.IssueToken(key, *sub, list, *ttl, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "api token: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stdout, tok)
	return exitOK
}
