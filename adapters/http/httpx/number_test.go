package httpx_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/httpx"
)

func TestExactInt(t *testing.T) {
	t.Parallel()
	ok := map[string]int64{
		"1000": 1000, "1e3": 1000, "1E+3": 1000, "1000.000": 1000, "1.5e3": 1500, "15000e-1": 1500,
		"-5": -5, "0": 0, "-0.0": 0, " 7 ": 7, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63,
		"0.00000000000000000000000000000000000000000000000000000001e56": 1,
	}
	for lit, want := range ok {
		got, valid := httpx.ExactInt([]byte(lit))
		require.True(t, valid, lit)
		require.Equal(t, want, got, lit)
	}
	for _, lit := range []string{
		"", `"1000"`, "true", "null", "01", "1.", ".5", "1e", "15e-1", "0.99999999999999999", "1.0000000000000000000000000000001e3",
		"9223372036854775808", "-9223372036854775809", "1e19", "1e99999999999999999999", "1 2", "0x10",
		"1" + strings.Repeat("0", httpx.MaxNumberLen), // longer than the bound, however exact
	} {
		_, valid := httpx.ExactInt([]byte(lit))
		require.False(t, valid, "%.40q", lit)
	}
}
