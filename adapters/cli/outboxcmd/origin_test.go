package outboxcmd

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestSanitizeOrigin(t *testing.T) {
	require.Equal(t, "alice@host-1", sanitizeOrigin("alice@host-1"))
	require.Equal(t, "alice[2J@host", sanitizeOrigin("al\x1bice[2J@ho\r\nst"), "control characters are removed")
	require.Equal(t, "alice@hostexe", sanitizeOrigin("alice@host\u202eexe\xff"), "format characters and invalid UTF-8 are removed")
	long := sanitizeOrigin("u@" + strings.Repeat("主", 200))
	require.LessOrEqual(t, len(long), maxOrigin)
	require.True(t, utf8.ValidString(long), "cut on a rune boundary")
	require.False(t, strings.ContainsFunc(origin(), unsafeRune))
	require.Contains(t, origin(), "@")
}
