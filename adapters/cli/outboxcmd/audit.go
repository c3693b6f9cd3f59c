package outboxcmd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/july/template/core/ports"
)

// AuditUsage lists the audit subcommand, for the binary's help.
const AuditUsage = `  relay audit list [--actor WHO] [--action A] [--resource-type T] [--resource-id ID]
                   [--since RFC3339] [--until RFC3339] [--limit N] [--json]
                                     audit records kept for the audit team, newest first
`

// RunAudit runs `relay audit ARGS` and returns the exit code.
func RunAudit(ctx context.Context, args []string, open OpenFunc, usage string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c := &opCLI{open: open, stdout: stdout, stderr: stderr}
	if args[0] != "list" {
		fmt.Fprintf(stderr, "relay audit: unknown subcommand %q (list)\n", args[0])
		return exitUsage
	}
	return c.auditList(ctx, args[1:])
}

func (c *opCLI) auditList(ctx context.Context, args []string) int {
	fs := c.flags("audit list")
	var f ports.AuditFilter
	fs.StringVar(&f.Actor, "actor", "", "who acted")
	fs.StringVar(&f.Action, "action", "", "e.g. config.update, outbox.replay, outbox.release_leases")
	fs.StringVar(&f.ResourceType, "resource-type", "", "e.g. system_config, outbox_batch")
	fs.StringVar(&f.ResourceID, "resource-id", "", "e.g. a config key or a replay batch id")
	since := fs.String("since", "", "recorded at or after (RFC 3339)")
	until := fs.String("until", "", "recorded before (RFC 3339)")
	fs.IntVar(&f.Limit, "limit", 50, "at most this many (1..500)")
	asJSON := fs.Bool("json", false, "print JSON")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	for _, t := range []struct {
		flag, v string
		dst     *time.Time
	}{{"since", *since, &f.Since}, {"until", *until, &f.Until}} {
		if t.v == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339, t.v)
		if err != nil {
			fmt.Fprintf(c.stderr, "relay audit list: --%s %q is not an RFC 3339 time, e.g. 2026-12-01T08:00:00Z\n", t.flag, t.v)
			return exitUsage
		}
		*t.dst = v
	}
	return c.with(ctx, "audit list", func(ctx context.Context) int {
		entries, err := c.audit.ListAudit(ctx, f)
		if err != nil {
			return c.fail("audit list", err)
		}
		if *asJSON {
			return c.printJSON(entries)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "RECORDED_AT\tACTION\tACTOR\tORIGIN\tRESOURCE\tOUTCOME\tCODE\tREASON")
		for _, e := range entries {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", e.At.Format(time.RFC3339), cell(e.Action), cell(e.Actor),
				cell(e.Origin), cell(e.ResourceType), cell(e.ResourceID), cell(e.Outcome), cell(e.Code), cell(e.Reason))
		}
		_ = tw.Flush()
		return exitOK
	})
}

// cell is a stored field as one table cell: records are free text from
// operators and callers (and older rows were stored unchecked), so control
// and format characters (CR, LF, ESC, tab, bidi overrides) and invalid
// UTF-8 are printed as Go escapes ("\n", "\x1b") instead of forging rows
// or driving the terminal. --json output is escaped by the JSON encoder.
func cell(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == utf8RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

const utf8RuneError = '\uFFFD'

func unsafeRune(r rune) bool {
	return r == utf8RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
