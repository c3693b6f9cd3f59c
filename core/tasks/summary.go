package tasks

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxSummaryRunes bounds a failure summary message.
const MaxSummaryRunes = 200

// Summary is the user-visible failure summary of a task: a stable machine
// code and a short Chinese explanation. It never carries SQL, stacks, hosts,
// secrets or raw upstream text; build one with NewSummary or SummaryFor.
type Summary struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// SummaryError is returned when a summary is malformed or looks like it
// leaks internals. It deliberately does not echo the message, which may hold
// exactly what must not be logged.
type SummaryError struct {
	Code   string
	Reason string
}

// Error implements error.
func (e *SummaryError) Error() string {
	return fmt.Sprintf("invalid task failure summary %q: %s", e.Code, e.Reason)
}

var codePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{2,63}$`)

// internals are shapes of text that belong in logs, never in a user-visible
// summary. Each entry is a reason and its pattern. Rejecting (rather than
// stripping) keeps the rule simple: fall back to SummaryFor(code).
var internals = []struct {
	reason  string
	pattern *regexp.Regexp
}{
	{"contains a stack trace", regexp.MustCompile(`goroutine \d|panic:|\.go:\d|runtime\.`)},
	{"contains SQL or a driver error", regexp.MustCompile(`\b(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE)\s|pq:|SQLSTATE|ERROR:\s|pgx|bun:`)},
	{"contains a URL", regexp.MustCompile(`://`)},
	{"contains an IP address", regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}\b|\[?[0-9a-fA-F]*::[0-9a-fA-F:]*\]?:\d+`)},
	{"contains a host:port", regexp.MustCompile(`(?i)\b(localhost|[a-z0-9-]+(\.[a-z0-9-]+)+):\d{2,5}\b`)},
	{"contains a file path", regexp.MustCompile(`(^|[\s"'(=])/[A-Za-z0-9_.-]+/|\b[A-Za-z]:\\`)},
	{"contains a credential", regexp.MustCompile(`(?i)\b(password|passwd|secret|token|api[_-]?key)\s*[=:]|\bbearer\s+\S`)},
}

// NewSummary validates and returns a failure summary. The code must match
// ^[A-Z][A-Z0-9_]{2,63}$; the message must be non-empty single-line text of
// at most MaxSummaryRunes runes with no stack trace, SQL, URL, host, file
// path or credential in it. Outer whitespace is trimmed.
func NewSummary(code, message string) (Summary, error) {
	s := Summary{Code: code, Message: strings.TrimSpace(message)}
	if err := s.Validate(); err != nil {
		return Summary{}, err
	}
	return s, nil
}

// Validate applies the NewSummary rules to s as it is.
func (s Summary) Validate() error {
	if !codePattern.MatchString(s.Code) {
		return &SummaryError{Code: s.Code, Reason: "code must match ^[A-Z][A-Z0-9_]{2,63}$"}
	}
	if reason := messageProblem(s.Message); reason != "" {
		return &SummaryError{Code: s.Code, Reason: "message " + reason + "; use a catalogue summary (SummaryFor) instead"}
	}
	return nil
}

func messageProblem(m string) string {
	switch {
	case strings.TrimSpace(m) == "":
		return "is empty"
	case !utf8.ValidString(m):
		return "is not valid UTF-8"
	case utf8.RuneCountInString(m) > MaxSummaryRunes:
		return fmt.Sprintf("is longer than %d runes", MaxSummaryRunes)
	case strings.ContainsFunc(m, unicode.IsControl):
		return "contains a newline or control character"
	}
	for _, in := range internals {
		if in.pattern.MatchString(m) {
			return in.reason
		}
	}
	return ""
}
