package httpx

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// MaxNumberLen bounds the JSON number literal ExactInt parses: an integer
// field's value fits in far fewer bytes however it is spelled (1000,
// 1e3, 1000.000), and the bound makes the work per number constant.
const MaxNumberLen = 64

// ExactInt returns the int64 that the JSON number b equals exactly, as
// 1000, 1e3 and 1000.0 all equal 1000. Strings (a quoted "1000"),
// fractions (0.99999999999999999 is not 1), values outside int64 and
// literals longer than MaxNumberLen bytes are refused. The decimal is
// read once, digit by digit, before any conversion: no float64, no big
// numbers, so its cost is bounded by MaxNumberLen.
func ExactInt(b []byte) (int64, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > MaxNumberLen || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) || !json.Valid(b) {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	// A valid JSON number: digits, an optional fraction, an optional
	// exponent. Collect the significant digits and the decimal exponent.
	var mant []byte
	exp, i := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		mant = append(mant, b[i])
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			mant = append(mant, b[i])
			exp--
		}
	}
	if i < len(b) { // 'e' or 'E'; MaxNumberLen keeps the exponent within int
		e, err := strconv.Atoi(string(b[i+1:]))
		if err != nil {
			return 0, false
		}
		exp += e
	}
	for len(mant) > 0 && mant[0] == '0' {
		mant = mant[1:]
	}
	if len(mant) == 0 {
		return 0, true
	}
	for mant[len(mant)-1] == '0' {
		mant, exp = mant[:len(mant)-1], exp+1
	}
	// The last digit is not zero now, so a negative exponent is a
	// fraction; more than 19 digits is past int64.
	if exp < 0 || len(mant)+exp > 19 {
		return 0, false
	}
	s := string(mant) + string(bytes.Repeat([]byte{'0'}, exp))
	if neg {
		s = "-" + s
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
