package idempotency_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
)

func TestParseFingerprint(t *testing.T) {
	t.Parallel()

	hex64 := strings.Repeat("0123456789abcdef", 4)
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"Valid", "v1:" + hex64, nil},
		{"NoColon", "v1" + hex64, idempotency.ErrFingerprintMalformed},
		{"NoV", "1:" + hex64, idempotency.ErrFingerprintMalformed},
		{"EmptyVersion", "v:" + hex64, idempotency.ErrFingerprintMalformed},
		{"LeadingZero", "v01:" + hex64, idempotency.ErrFingerprintMalformed},
		{"PlusSign", "v+1:" + hex64, idempotency.ErrFingerprintMalformed},
		{"Negative", "v-1:" + hex64, idempotency.ErrFingerprintMalformed},
		{"Unsupported", "v4:" + hex64, idempotency.ErrUnsupportedVersion},
		{"Uppercase", "v1:" + strings.ToUpper(hex64), idempotency.ErrFingerprintMalformed},
		{"Short", "v1:" + hex64[:63], idempotency.ErrFingerprintMalformed},
		{"NotHex", "v1:" + hex64[:63] + "g", idempotency.ErrFingerprintMalformed},
		{"Empty", "", idempotency.ErrFingerprintMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			fp, err := idempotency.ParseFingerprint(tt.in)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr, "input %q", tt.in)
				return
			}
			require.NoError(t, err, "input %q", tt.in)
			require.Equal(t, idempotency.FingerprintV1, fp.Version)
			require.Equal(t, tt.in, fp.String(), "round trip")
		})
	}
}

func TestFingerprintEqual(t *testing.T) {
	t.Parallel()

	a := idempotency.Fingerprint{Version: idempotency.FingerprintV1, Sum: "ab"}
	require.True(t, a.Equal(a))
	require.False(t, a.Equal(idempotency.Fingerprint{Version: 2, Sum: "ab"}), "versions differ")
	require.False(t, a.Equal(idempotency.Fingerprint{Version: idempotency.FingerprintV1, Sum: "ac"}), "sums differ")
	require.False(t, idempotency.Fingerprint{}.Equal(idempotency.Fingerprint{}), "zero equals nothing")
	require.True(t, idempotency.Fingerprint{}.IsZero())
	require.Equal(t, "v1:ab", a.String())
}

func TestFromCommand(t *testing.T) {
	t.Parallel()
	type cmd struct {
		Amount  int64  `json:"amount"`
		Channel string `json:"channel"`
	}
	a, err := idempotency.FromCommand(cmd{1000, "wechat"})
	require.NoError(t, err)
	require.Equal(t, idempotency.FingerprintV2, a.Version)
	b, _ := idempotency.FromCommand(cmd{1000, "wechat"})
	c, _ := idempotency.FromCommand(cmd{1000, "alipay"})
	require.True(t, a.Equal(b))
	require.False(t, a.Equal(c))
	p, err := idempotency.ParseFingerprint(a.String())
	require.NoError(t, err)
	require.Equal(t, a, p)
	for _, raw := range []any{nil, []byte(`{}`), "x"} {
		_, err := idempotency.FromCommand(raw)
		require.Error(t, err, "%T", raw)
	}
}

func TestFingerprintWithParams(t *testing.T) {
	t.Parallel()
	f := idempotency.Fingerprint{Version: idempotency.FingerprintV3, Sum: strings.Repeat("ab", 32)}
	require.Equal(t, f, f.WithParams(nil), "rule: a route without path parameters keeps its fingerprints")
	require.True(t, idempotency.Fingerprint{}.WithParams(map[string]string{"id": "1"}).IsZero())

	a := f.WithParams(map[string]string{"card_id": "A", "slot": "1"})
	require.Equal(t, idempotency.FingerprintV3, a.Version)
	require.False(t, a.Equal(f))
	require.True(t, a.Equal(f.WithParams(map[string]string{"slot": "1", "card_id": "A"})))
	for _, other := range []map[string]string{
		{"card_id": "B", "slot": "1"},
		{"card_id": "A", "slot": "2"},
		{"card_id": "A1", "slot": ""},
		{"card_idA": "", "slot": "1"},
		{"card_id": "A"},
	} {
		require.False(t, a.Equal(f.WithParams(other)), "%v", other)
	}
	_, err := idempotency.ParseFingerprint(a.String())
	require.NoError(t, err)
}
