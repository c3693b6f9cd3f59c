package idempotency_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
)

// FuzzFingerprintCanonical checks that FromJSON never panics and that any
// valid JSON object, re-encoded with other whitespace and key order, keeps
// its fingerprint.
func FuzzFingerprintCanonical(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"amount":100,"currency":"CNY"}`,
		`{"b":1,"a":[1,2,{"z":null,"y":true}],"c":"\u00e9"}`,
		`{"n":1.0,"m":1e0,"k":10e-1,"j":-0,"i":1.5E+3}`,
		`{"order":{"timestamp":1,"requestId":"x","items":[{"Token":"t","qty":2}]}}`,
		`{"a":1,"a":2}`,
		`{"s":"<>&\u2028\ud800"}`,
		`[1,"2",[3]]`,
		`{"a":1e999999999}`,
		`{"a":`,
		"{\"a\":\"\xff\"}",
		``,
	} {
		f.Add([]byte(seed))
	}
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, data []byte) {
		orig, err := fp.FromJSON(data) // must never panic, whatever data is
		if err != nil {
			require.ErrorIs(t, err, idempotency.ErrInvalidInput, "input %q", data)
			return
		}

		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var obj map[string]any
		if dec.Decode(&obj) != nil || obj == nil {
			return // valid JSON, but not an object
		}
		// encoding/json sorts map keys and MarshalIndent adds whitespace, so
		// both differ from the input in key order and layout.
		for _, reencode := range []func() ([]byte, error){
			func() ([]byte, error) { return json.MarshalIndent(obj, " ", "\t") },
			func() ([]byte, error) { return json.Marshal(obj) },
		} {
			out, err := reencode()
			require.NoError(t, err, "input %q", data)
			got, err := fp.FromJSON(out)
			require.NoError(t, err, "input %q re-encoded %q", data, out)
			require.Equal(t, orig, got, "input %q re-encoded %q", data, out)
		}
	})
}
