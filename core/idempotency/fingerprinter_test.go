package idempotency_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
)

// newFingerprinter is a v1 Fingerprinter with the default volatile list: the
// tables below pin v1's rules, which stored records still depend on.
func newFingerprinter(t *testing.T) *idempotency.Fingerprinter {
	t.Helper()

	f, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Version: idempotency.FingerprintV1})
	require.NoError(t, err)
	return f
}

func fingerprint(t *testing.T, f *idempotency.Fingerprinter, body string) idempotency.Fingerprint {
	t.Helper()

	fp, err := f.FromJSON([]byte(body))
	require.NoError(t, err, "body %s", body)
	require.Equal(t, f.Version(), fp.Version)
	require.Len(t, fp.Sum, 64)
	return fp
}

func TestFingerprintInvariance(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		a, b string
	}{
		{"KeyOrder", `{"amount":100,"currency":"CNY"}`, `{"currency":"CNY","amount":100}`},
		{"Whitespace", `{"amount":100,"items":[1,2]}`, " {\n\t\"amount\" : 100 ,\r\n \"items\" : [ 1 , 2 ] } \n"},
		{"IntVsDecimal", `{"n":1}`, `{"n":1.0}`},
		{"IntVsTrailingZeros", `{"n":1}`, `{"n":1.00}`},
		{"IntVsExponent", `{"n":1}`, `{"n":1e0}`},
		{"IntVsScaledExponent", `{"n":1}`, `{"n":10e-1}`},
		{"UpperExponent", `{"n":1500}`, `{"n":1.5E+3}`},
		{"Fraction", `{"n":0.25}`, `{"n":25e-2}`},
		{"LeadingFractionZeros", `{"n":0.001}`, `{"n":1e-3}`},
		{"NegativeZero", `{"n":0}`, `{"n":-0.0e5}`},
		{"Negative", `{"n":-12.50}`, `{"n":-1.25e1}`},
		{"HugePrecision", `{"n":123456789012345678901234567890}`, `{"n":1.23456789012345678901234567890e29}`},
		{"NestedKeyOrder", `{"a":{"x":1,"y":{"p":[{"k":1,"j":2}]}}}`, `{"a":{"y":{"p":[{"j":2,"k":1}]},"x":1}}`},
		{"EscapedString", `{"s":"é<"}`, `{"s":"\u00e9\u003c"}`},
		{"DuplicateKeyLastWins", `{"a":1,"a":2}`, `{"a":2}`},
		{"VolatileTopLevel", `{"amount":1,"timestamp":1719830400}`, `{"amount":1,"timestamp":1719830999}`},
		{"VolatileDropped", `{"amount":1,"nonce":"abc","sig":"x"}`, `{"amount":1}`},
		{"VolatileNested", `{"order":{"amount":1,"meta":{"ts":1}}}`, `{"order":{"amount":1,"meta":{"ts":2}}}`},
		{"VolatileInArray", `{"items":[{"id":1,"token":"a"},{"id":2}]}`, `{"items":[{"id":1},{"id":2,"token":"b"}]}`},
		{"VolatileCamel", `{"a":1,"requestId":"x"}`, `{"a":1}`},
		{"VolatileHeaderStyle", `{"a":1,"Request-ID":"x"}`, `{"a":1}`},
		{"VolatileSnake", `{"a":1,"request_id":"x"}`, `{"a":1}`},
		{"VolatileUpper", `{"a":1,"TIMESTAMP":"x","Access-Token":"y","IdempotencyKey":"z"}`, `{"a":1}`},
		{"VolatileObjectValue", `{"a":1,"signature":{"alg":"rsa","v":"x"}}`, `{"a":1,"Signature":[1,2]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			f := newFingerprinter(t)
			require.Equal(t, fingerprint(t, f, tt.a), fingerprint(t, f, tt.b), "a %s\nb %s", tt.a, tt.b)
		})
	}
}

func TestFingerprintSensitivity(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		a, b string
	}{
		{"ChangedAmount", `{"amount":100,"currency":"CNY"}`, `{"amount":101,"currency":"CNY"}`},
		{"ChangedNested", `{"o":{"items":[{"sku":"a","qty":1}]}}`, `{"o":{"items":[{"sku":"a","qty":2}]}}`},
		{"ArrayOrder", `{"items":[1,2]}`, `{"items":[2,1]}`},
		{"NumberVsString", `{"n":1}`, `{"n":"1"}`},
		{"NullVsMissing", `{"a":1,"b":null}`, `{"a":1}`},
		{"FalseVsNull", `{"b":false}`, `{"b":null}`},
		{"EmptyArrayVsObject", `{"b":[]}`, `{"b":{}}`},
		{"KeyCaseMatters", `{"Amount":1}`, `{"amount":1}`},
		{"StringCase", `{"s":"abc"}`, `{"s":"ABC"}`},
		{"NoUnicodeNormalisation", `{"s":"\u00e9"}`, `{"s":"e\u0301"}`},
		{"SmallDifference", `{"n":0.1}`, `{"n":0.10000000000000001}`},
		{"ExponentSign", `{"n":1e2}`, `{"n":1e-2}`},
		{"Negative", `{"n":1}`, `{"n":-1}`},
		{"VolatileLookalike", `{"a":1,"timestamps":[1]}`, `{"a":1,"timestamps":[2]}`},
		{"KeyValueBoundary", `{"ab":"c"}`, `{"a":"bc"}`},
		{"ArrayNesting", `[[1],[2]]`, `[[1,2]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			f := newFingerprinter(t)
			require.NotEqual(t, fingerprint(t, f, tt.a), fingerprint(t, f, tt.b), "a %s\nb %s", tt.a, tt.b)
		})
	}
}

func TestFingerprintRejectsInvalidInput(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		body string
	}{
		{"Empty", ""},
		{"OnlySpace", "  \n"},
		{"Truncated", `{"a":1`},
		{"TrailingComma", `{"a":1,}`},
		{"SingleQuotes", `{'a':1}`},
		{"Trailing", `{"a":1} x`},
		{"TwoValues", `{"a":1}{"a":1}`},
		{"TrailingBracket", `{"a":1}]`},
		{"NotJSON", "amount=1&currency=CNY"},
		{"InvalidUTF8", "{\"a\":\"\xff\"}"},
		{"NaN", `{"a":NaN}`},
		{"LeadingZero", `{"a":01}`},
		{"HugeExponent", `{"a":1e1000000000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, err := newFingerprinter(t).FromJSON([]byte(tt.body))
			require.ErrorIs(t, err, idempotency.ErrInvalidInput, "body %q", tt.body)
		})
	}
}

func TestFingerprintScalarsAndLargeExponents(t *testing.T) {
	t.Parallel()

	f := newFingerprinter(t)
	for _, body := range []string{`null`, `true`, `"s"`, `[]`, `{}`, `1e99999999`, `-1e-99999999`} {
		fingerprint(t, f, body)
	}
	require.Equal(t, fingerprint(t, f, `1e99999999`), fingerprint(t, f, `10e99999998`))
}

func TestFingerprintFromValue(t *testing.T) {
	t.Parallel()

	type item struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	}
	type command struct {
		Amount    float64 `json:"amount"`
		Items     []item  `json:"items"`
		RequestID string  `json:"request_id"`
	}
	f := newFingerprinter(t)

	fromValue, err := f.FromValue(command{Amount: 12.5, Items: []item{{"a", 1}}, RequestID: "r-1"})
	require.NoError(t, err)
	raw := fingerprint(t, f, `{"items":[{"qty":1.0,"sku":"a"}],"amount":12.50}`)
	require.Equal(t, raw, fromValue, "a struct and its raw body agree")

	fromMap, err := f.FromValue(map[string]any{"amount": json.Number("1.25e1"), "items": []any{map[string]any{"sku": "a", "qty": 1}}})
	require.NoError(t, err)
	require.Equal(t, raw, fromMap)

	_, err = f.FromValue([]byte(`{"a":1}`))
	require.ErrorIs(t, err, idempotency.ErrInvalidInput, "[]byte is refused")

	_, err = f.FromValue(map[string]any{"c": make(chan int)})
	require.ErrorIs(t, err, idempotency.ErrInvalidInput, "unmarshalable value")
}

func TestNewFingerprinter(t *testing.T) {
	t.Parallel()

	t.Run("DefaultVersion", func(t *testing.T) {
		t.Parallel()

		f, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
		require.NoError(t, err)
		require.Equal(t, idempotency.FingerprintV3, f.Version())
	})

	t.Run("UnsupportedVersion", func(t *testing.T) {
		t.Parallel()

		_, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Version: 2})
		require.ErrorIs(t, err, idempotency.ErrUnsupportedVersion)
	})

	t.Run("EmptyVolatileName", func(t *testing.T) {
		t.Parallel()

		_, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Volatile: []string{"ts", "--"}})
		require.ErrorIs(t, err, idempotency.ErrInvalidInput)
	})

	t.Run("CustomVolatile", func(t *testing.T) {
		t.Parallel()

		f, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{
			Version: idempotency.FingerprintV1, Volatile: append(idempotency.DefaultVolatileFields(), "client_sent_at"),
		})
		require.NoError(t, err)
		require.Equal(t, fingerprint(t, f, `{"a":1,"ClientSentAt":5,"ts":1}`), fingerprint(t, f, `{"a":1}`))
	})

	t.Run("EmptyVolatileKeepsEverything", func(t *testing.T) {
		t.Parallel()

		f, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Version: idempotency.FingerprintV1, Volatile: []string{}})
		require.NoError(t, err)
		require.NotEqual(t, fingerprint(t, f, `{"a":1,"ts":1}`), fingerprint(t, f, `{"a":1}`))
	})

	t.Run("DefaultsAreACopy", func(t *testing.T) {
		t.Parallel()

		d := idempotency.DefaultVolatileFields()
		d[0] = "amount"
		require.NotEqual(t, "amount", idempotency.DefaultVolatileFields()[0])
		require.Contains(t, d, "idempotency_key")
	})
}

func TestFingerprintLongKeys(t *testing.T) {
	t.Parallel()

	// Keys longer than any volatile name skip the lookup but still count.
	f := newFingerprinter(t)
	long := strings.Repeat("k", 200)
	require.NotEqual(t, fingerprint(t, f, `{"`+long+`":1}`), fingerprint(t, f, `{"`+long+`":2}`))
	require.Equal(t, fingerprint(t, f, `{"`+strings.Repeat("_", 100)+`ts":1,"a":1}`), fingerprint(t, f, `{"a":1}`),
		"separators do not count towards a name")
}

// TestFingerprintV3 pins v3's one difference from v1: volatile names are the
// route's own top-level transport fields, so business fields called "time",
// "ts" or "sign" inside the command always count (a payment's nested
// "time", a login's signed "sign").
func TestFingerprintV3(t *testing.T) {
	t.Parallel()

	named, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Volatile: []string{"timestamp", "nonce"}})
	require.NoError(t, err)
	bare, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	require.NoError(t, err)
	v1 := newFingerprinter(t)

	t.Run("NamedTopLevelFieldsDropped", func(t *testing.T) {
		t.Parallel()

		require.Equal(t, fingerprint(t, named, `{"amount":1,"timestamp":1,"Nonce":"a"}`), fingerprint(t, named, `{"amount":1,"timestamp":2}`))
	})
	t.Run("NestedSameNameCounts", func(t *testing.T) {
		t.Parallel()

		a, b := `{"pay":{"amount":1,"timestamp":1}}`, `{"pay":{"amount":1,"timestamp":2}}`
		require.NotEqual(t, fingerprint(t, named, a), fingerprint(t, named, b))
		require.Equal(t, fingerprint(t, v1, a), fingerprint(t, v1, b), "v1 ignored it: the defect v3 fixes")
	})
	t.Run("NestedBusinessTimeAndSignCount", func(t *testing.T) {
		t.Parallel()

		for _, pair := range [][2]string{
			{`{"order":{"time":"2026-12-01T10:00:00Z"}}`, `{"order":{"time":"2026-12-02T10:00:00Z"}}`},
			{`{"login":{"sign":"abc"}}`, `{"login":{"sign":"abd"}}`},
			{`{"items":[{"ts":1}]}`, `{"items":[{"ts":2}]}`},
		} {
			require.NotEqual(t, fingerprint(t, bare, pair[0]), fingerprint(t, bare, pair[1]), "%s vs %s", pair[0], pair[1])
		}
	})
	t.Run("NilVolatileDropsNothing", func(t *testing.T) {
		t.Parallel()

		require.NotEqual(t, fingerprint(t, bare, `{"a":1,"ts":1}`), fingerprint(t, bare, `{"a":1,"ts":2}`))
	})
	t.Run("DiffersFromV1", func(t *testing.T) {
		t.Parallel()

		require.NotEqual(t, fingerprint(t, bare, `{"a":1}`), fingerprint(t, v1, `{"a":1}`), "versions never compare equal")
	})
}
