package outboxcmd

import (
	"os"
	"os/user"
	"strings"
	"unicode/utf8"
)

// maxOrigin is the length of tb_audit_record.origin.
const maxOrigin = 256

// origin is where this command runs, "user@host" from the operating system,
// for the audit record beside the free-text --operator and --reason. A part
// the system cannot tell is "?". Control and format characters and invalid
// UTF-8 are removed and the result is cut to maxOrigin bytes.
func origin() string {
	name, host := "?", "?"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		host = h
	}
	return sanitizeOrigin(name + "@" + host)
}

// sanitizeOrigin removes unsafe runes from s and keeps at most maxOrigin
// bytes of it, on a rune boundary.
func sanitizeOrigin(s string) string {
	s = strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if len(s) <= maxOrigin {
		return s
	}
	n := maxOrigin
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
