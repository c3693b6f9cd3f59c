package release

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A migration file is read in three steps: directives (comment lines
// "-- migrate:key=value"), then statements with comments, string literals
// and dollar-quoted bodies blanked out, then the keywords of each statement.
// Only the statement's own keywords count: DML inside a function body, a
// comment or a string literal is not a data change.

// dataStatements are the statement keywords that change rows.
var dataStatements = map[string]bool{"insert": true, "update": true, "delete": true, "truncate": true, "copy": true, "merge": true}

// dropTarget is a table, or a column of it, that a migration drops.
type dropTarget struct {
	Table  string // as written, unquoted and lower-cased unless it was quoted; may be schema-qualified
	Column string // empty for DROP TABLE
}

// Object is the target's safe identifier in findings ("table" or "table.column").
func (d dropTarget) Object() string {
	if d.Column == "" {
		return d.Table
	}
	return d.Table + "." + d.Column
}

// sqlFile is what release learns from one migration file.
type sqlFile struct {
	// Queries are the file's parts in the order bun runs them (the whole
	// file, or its "--bun:split" parts).
	Queries []string
	// Writes lists the data-changing keywords of its statements, one per statement.
	Writes []string
	// Drops lists the tables and columns it drops.
	Drops []dropTarget
	// LockTimeout and StatementTimeout are the -- migrate: directives, zero when absent.
	LockTimeout, StatementTimeout time.Duration
	// ForwardOnly is the reason of a ForwardOnlyDirective, "" when absent.
	ForwardOnly string
}

// ForwardOnlyDirective marks a migration that has no down file on purpose:
// "-- migrate:forward_only: the rows it holds are business facts from the
// first write". The reason is required; check reports a pending migration
// with neither a down file nor this line (rollback_boundary_missing), and
// down refuses it with the reason: every migration states its forward and
// rollback boundary (docs/release-runbook.md).
const ForwardOnlyDirective = "migrate:forward_only"

var reDirective = regexp.MustCompile(`^\s*--\s*migrate:\s*([a-z_]+)\s*=\s*(\S+)\s*$`)

// parseSQLFile reads a migration file. It fails on an unknown or malformed
// -- migrate: directive.
func parseSQLFile(src string) (sqlFile, error) {
	var f sqlFile
	var query strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(line, "--bun:split") {
			if strings.TrimSpace(query.String()) != "" {
				f.Queries = append(f.Queries, query.String())
			}
			query.Reset()
			continue
		}
		query.WriteString(line)
		query.WriteByte('\n')
		if !strings.Contains(line, "migrate:") {
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "--")), ForwardOnlyDirective); ok {
			reason, ok := strings.CutPrefix(strings.TrimSpace(rest), ":")
			if reason = strings.TrimSpace(reason); !ok || reason == "" {
				return f, fmt.Errorf("directive %s needs a reason: write -- %s: <why this migration cannot be rolled back>", ForwardOnlyDirective, ForwardOnlyDirective)
			}
			f.ForwardOnly = reason
			continue
		}
		m := reDirective.FindStringSubmatch(line)
		if _, _, ok := parseAllow(strings.TrimPrefix(strings.TrimSpace(line), "--")); m == nil && ok {
			continue // a lint suppression (see AllowDirective), checked by the rehearsal
		}
		if m == nil {
			if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "--")), "migrate:") {
				return f, fmt.Errorf("malformed directive %q: want -- migrate:lock_timeout=5s, -- migrate:statement_timeout=15m or -- migrate:forward_only: reason", strings.TrimSpace(line))
			}
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil || d <= 0 {
			return f, fmt.Errorf("directive migrate:%s: %q is not a positive duration (e.g. 2s, 15m)", m[1], m[2])
		}
		switch m[1] {
		case "lock_timeout":
			f.LockTimeout = d
		case "statement_timeout":
			f.StatementTimeout = d
		default:
			return f, fmt.Errorf("unknown directive migrate:%s: known are lock_timeout, statement_timeout and forward_only", m[1])
		}
	}
	if strings.TrimSpace(query.String()) != "" {
		f.Queries = append(f.Queries, query.String())
	}
	for _, st := range splitStatements(src) {
		toks := tokens(st)
		if w := writeKeyword(toks); w != "" {
			f.Writes = append(f.Writes, w)
		}
		f.Drops = append(f.Drops, drops(toks)...)
	}
	return f, nil
}

// splitStatements blanks comments, string literals and dollar-quoted bodies
// (each literal becomes ”), lower-cases everything outside double-quoted
// identifiers and splits the result on semicolons.
func splitStatements(src string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if s := strings.TrimSpace(b.String()); s != "" {
			out = append(out, s)
		}
		b.Reset()
	}
	isIdent := func(c byte) bool {
		return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			depth := 0
			for i < len(src) {
				if strings.HasPrefix(src[i:], "/*") {
					depth, i = depth+1, i+2
				} else if strings.HasPrefix(src[i:], "*/") {
					depth, i = depth-1, i+2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			b.WriteByte(' ')
		case c == '\'':
			// E'...' strings allow backslash escapes; standard strings only ''.
			escapes := i > 0 && (src[i-1] == 'e' || src[i-1] == 'E') && (i < 2 || !isIdent(src[i-2]))
			i++
			for i < len(src) {
				if escapes && src[i] == '\\' {
					i += 2
					continue
				}
				if src[i] == '\'' {
					if i+1 < len(src) && src[i+1] == '\'' {
						i += 2
						continue
					}
					break
				}
				i++
			}
			i++
			b.WriteString("''")
		case c == '"':
			j := i + 1
			for j < len(src) {
				if src[j] == '"' {
					if j+1 < len(src) && src[j+1] == '"' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			b.WriteString(src[i:min(j+1, len(src))])
			i = j + 1
		case c == '$' && (i == 0 || !isIdent(src[i-1])):
			tag := reDollarQuote.FindString(src[i:])
			if tag == "" {
				b.WriteByte(c)
				i++
				continue
			}
			end := strings.Index(src[i+len(tag):], tag)
			if end < 0 {
				i = len(src)
			} else {
				i += len(tag) + end + len(tag)
			}
			b.WriteString("''")
		case c == ';':
			flush()
			i++
		default:
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
		}
	}
	flush()
	return out
}

var reDollarQuote = regexp.MustCompile(`^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$`)

// tokens splits a blanked statement into names (dotted and quoted parts
// kept together) and single punctuation characters.
func tokens(st string) []string {
	var out []string
	for i := 0; i < len(st); {
		c := st[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80:
			j := i
			for j < len(st) {
				if st[j] == '"' {
					k := j + 1
					for k < len(st) {
						if st[k] == '"' {
							if k+1 < len(st) && st[k+1] == '"' {
								k += 2
								continue
							}
							break
						}
						k++
					}
					j = k + 1
					continue
				}
				if d := st[j]; d == '_' || d == '$' || d == '.' || d >= 'a' && d <= 'z' || d >= '0' && d <= '9' || d >= 0x80 {
					j++
					continue
				}
				break
			}
			out = append(out, st[i:min(j, len(st))])
			i = j
		default:
			out = append(out, string(c))
			i++
		}
	}
	return out
}

// writeKeyword returns the data-changing keyword of a statement, or "".
func writeKeyword(toks []string) string {
	if len(toks) == 0 {
		return ""
	}
	if dataStatements[toks[0]] {
		return toks[0]
	}
	if toks[0] != "with" {
		return ""
	}
	// A data-modifying CTE: WITH d AS (DELETE ...) SELECT ...
	for i, t := range toks {
		if t == "insert" || t == "delete" || t == "merge" || t == "update" && (i == 0 || toks[i-1] != "for" && toks[i-1] != "key") {
			return t
		}
	}
	return ""
}

// drops returns what a DROP TABLE or ALTER TABLE ... DROP [COLUMN] drops.
func drops(toks []string) []dropTarget {
	at := func(i int, words ...string) bool {
		for k, w := range words {
			if i+k >= len(toks) || toks[i+k] != w {
				return false
			}
		}
		return true
	}
	skip := func(i int, words ...string) int {
		if at(i, words...) {
			return i + len(words)
		}
		return i
	}
	var out []dropTarget
	switch {
	case at(0, "drop", "table"):
		for i := skip(2, "if", "exists"); i < len(toks); i++ {
			if t := toks[i]; t != "," && t != "cascade" && t != "restrict" {
				out = append(out, dropTarget{Table: identifier(t)})
			}
		}
	case at(0, "alter", "table"):
		i := skip(skip(2, "if", "exists"), "only")
		if i >= len(toks) {
			return nil
		}
		table := identifier(toks[i])
		depth := 0
		start := true // at the start of an action
		for i++; i < len(toks); i++ {
			switch t := toks[i]; {
			case t == "(":
				depth++
			case t == ")":
				depth--
			case t == "," && depth == 0:
				start = true
				continue
			case start && t == "drop":
				j := i + 1
				if at(j, "constraint") {
					break
				}
				j = skip(skip(j, "column"), "if", "exists")
				if j < len(toks) {
					out = append(out, dropTarget{Table: table, Column: identifier(toks[j])})
				}
			}
			start = false
		}
	}
	return out
}

// identifier unquotes a possibly quoted, possibly qualified name.
func identifier(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, `""`, "\x00"), `"`, "")
}

// quoteQualified quotes a (possibly schema-qualified) name for SQL text.
func quoteQualified(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = `"` + strings.ReplaceAll(strings.ReplaceAll(p, "\x00", `"`), `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}
