package idempotency

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// maxExpDigits bounds a number's exponent so the canonical form stays small
// and no big-number arithmetic is ever needed: |exponent| < 10^9.
const maxExpDigits = 9

// appendCanonical appends the canonical encoding of a value decoded by
// encoding/json with UseNumber; top is true for the body's own value. The
// encoding is injective on JSON values: strings are always quoted, numbers
// never are.
func (f *Fingerprinter) appendCanonical(dst []byte, v any, top bool) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case string:
		return strconv.AppendQuote(dst, x), nil
	case json.Number:
		return appendNumber(dst, string(x))
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = f.appendCanonical(dst, e, false); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		skip := top || f.anyDepth
		for k := range x {
			if !skip || !f.isVolatile(k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(strconv.AppendQuote(dst, k), ':')
			if dst, err = f.appendCanonical(dst, x[k], false); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return nil, fmt.Errorf("unexpected decoded type %T", v) // unreachable with encoding/json
}

// appendNumber appends the canonical form of a JSON number literal: an
// optional '-', the significant digits without leading or trailing zeros,
// and "e<exp>" when the exponent is not zero. Zero, including -0, is "0".
// So 1, 1.0, 1e0 and 10e-1 are all "1", and 1500 and 1.5e3 are both "15e2".
func appendNumber(dst []byte, lit string) ([]byte, error) {
	s := lit
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var digits [64]byte
	mant := digits[:0]
	exp, i, fracLen := 0, 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		mant = append(mant, s[i])
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			mant = append(mant, s[i])
			fracLen++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		e, err := parseExp(s[i+1:])
		if err != nil {
			return nil, fmt.Errorf("number %.32q: %w", lit, err)
		}
		exp, i = e, len(s)
	}
	if i != len(s) || len(mant) == 0 {
		return nil, fmt.Errorf("number %.32q is not a JSON number", lit)
	}
	exp -= fracLen
	for len(mant) > 0 && mant[0] == '0' {
		mant = mant[1:]
	}
	if len(mant) == 0 {
		return append(dst, '0'), nil
	}
	for mant[len(mant)-1] == '0' {
		mant, exp = mant[:len(mant)-1], exp+1
	}
	if neg {
		dst = append(dst, '-')
	}
	dst = append(dst, mant...)
	if exp != 0 {
		dst = strconv.AppendInt(append(dst, 'e'), int64(exp), 10)
	}
	return dst, nil
}

var errExpRange = errors.New("exponent out of range")

// parseExp parses "[+-]digits", refusing exponents of maxExpDigits or more
// significant digits.
func parseExp(s string) (int, error) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return 0, errors.New("empty exponent")
	}
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	if len(s) >= maxExpDigits {
		return 0, errExpRange
	}
	e, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad exponent: %w", err)
	}
	if neg {
		e = -e
	}
	return e, nil
}
