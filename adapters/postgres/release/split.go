package release

import (
	"strings"
)

// Statement is one SQL statement of a migration file, as written.
type Statement struct {
	// SQL is the statement's text without the terminating semicolon.
	SQL string
	// Line is the 1-based line where the statement starts.
	Line int
	// Allow maps a lint code to the reason given in a
	// "-- migrate:allow CODE: reason" comment just before the statement.
	Allow map[string]string
}

// AllowDirective starts a comment that suppresses one lint finding of the
// next statement: "-- migrate:allow lint_index_not_concurrent: table is
// empty until the feature ships". The reason is required and reported.
const AllowDirective = "migrate:allow"

// SplitStatements splits a migration file into statements on the
// semicolons Postgres itself would split on: outside quotes (”, E”,
// ""), dollar-quoted bodies and comments (--, nested /* */).
func SplitStatements(sql string) []Statement {
	var (
		out     []Statement
		start   = -1 // byte offset of the current statement's first token
		line    = 1
		stLine  int
		allow   = map[string]string{}
		pending = map[string]string{} // directives seen since the last statement
	)
	flush := func(end int) {
		if start >= 0 {
			if text := strings.TrimSpace(sql[start:end]); text != "" {
				out = append(out, Statement{SQL: text, Line: stLine, Allow: allow})
			}
		}
		start, allow = -1, map[string]string{}
	}
	begin := func(i int) {
		if start < 0 {
			start, stLine, allow, pending = i, line, pending, map[string]string{}
		}
	}
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case c == '\n':
			line++
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = len(sql) - i
			}
			if code, reason, ok := parseAllow(sql[i+2 : i+end]); ok && start < 0 {
				pending[code] = reason
			}
			i += end - 1
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			depth := 0
		comment:
			for ; i < len(sql); i++ {
				switch {
				case sql[i] == '\n':
					line++
				case sql[i] == '/' && i+1 < len(sql) && sql[i+1] == '*':
					depth++
					i++
				case sql[i] == '*' && i+1 < len(sql) && sql[i+1] == '/':
					depth--
					i++
					if depth == 0 {
						break comment
					}
				}
			}
		case c == ';':
			flush(i)
		case c == ' ' || c == '\t' || c == '\r':
		case c == '\'' || c == '"':
			begin(i)
			escapes := c == '\'' && i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e')
		quoted:
			for i++; i < len(sql); i++ {
				switch {
				case sql[i] == '\n':
					line++
				case escapes && sql[i] == '\\':
					i++
				case sql[i] == c && i+1 < len(sql) && sql[i+1] == c:
					i++ // doubled quote
				case sql[i] == c:
					break quoted
				}
			}
		case c == '$':
			begin(i)
			if tag, ok := dollarTag(sql[i:]); ok {
				end := strings.Index(sql[i+len(tag):], tag)
				if end < 0 {
					end = len(sql) - i - len(tag)
				}
				line += strings.Count(sql[i:i+len(tag)+end], "\n")
				i += len(tag) + end + len(tag) - 1
			}
		default:
			begin(i)
		}
	}
	flush(len(sql))
	return out
}

// dollarTag returns the $tag$ s starts with.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 1 && c >= '0' && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
}

// parseAllow reads " migrate:allow CODE: reason".
func parseAllow(comment string) (code, reason string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(comment), AllowDirective)
	if !ok {
		return "", "", false
	}
	code, reason, ok = strings.Cut(strings.TrimSpace(rest), ":")
	code, reason = strings.TrimSpace(code), strings.TrimSpace(reason)
	return code, reason, ok && code != "" && reason != ""
}
