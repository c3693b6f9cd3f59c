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
		{"Unsupported", "v2:" + hex64, idempotency.ErrUnsupportedVersion},
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
