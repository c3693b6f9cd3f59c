package idempotency_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
)

func TestValidateKey(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		key     string
		wantErr error // nil, ErrKeyMissing or ErrKeyMalformed
		wantPos int
	}{
		{"UUID", "3f2a9c1e-8b7d-4e6f-a1b2-c3d4e5f60718", nil, 0},
		{"ULID", "01HZX3Q9K7M2N8P4R6T0V5W1YB", nil, 0},
		{"MinLen", strings.Repeat("a", idempotency.KeyMinLen), nil, 0},
		{"MaxLen", strings.Repeat("Z", idempotency.KeyMaxLen), nil, 0},
		{"AllPunctuation", "order.2024_01:abc-9", nil, 0},
		{"Empty", "", idempotency.ErrKeyMissing, 0},
		{"TooShort", strings.Repeat("a", idempotency.KeyMinLen-1), idempotency.ErrKeyMalformed, -1},
		{"TooLong", strings.Repeat("a", idempotency.KeyMaxLen+1), idempotency.ErrKeyMalformed, -1},
		{"Space", "abcd efgh", idempotency.ErrKeyMalformed, 4},
		{"Slash", "abcd/efgh", idempotency.ErrKeyMalformed, 4},
		{"NonASCII", "abcdéfgh", idempotency.ErrKeyMalformed, 4},
		{"Newline", "abcdefgh\n", idempotency.ErrKeyMalformed, 8},
		{"OnlySpaces", "          ", idempotency.ErrKeyMalformed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := idempotency.ValidateKey(tt.key)
			if tt.wantErr == nil {
				require.NoError(t, err, "key %q", tt.key)
				return
			}
			require.ErrorIs(t, err, tt.wantErr, "key %q", tt.key)
			if errors.Is(tt.wantErr, idempotency.ErrKeyMissing) {
				require.NotErrorIs(t, err, idempotency.ErrKeyMalformed, "key %q", tt.key)
				return
			}
			var fe *idempotency.KeyFormatError
			require.True(t, errors.As(err, &fe), "key %q: %v", tt.key, err)
			require.Equal(t, tt.wantPos, fe.Pos, "key %q", tt.key)
			require.Equal(t, len(tt.key), fe.Len, "key %q", tt.key)
			require.NotContains(t, err.Error(), tt.key, "the key is untrusted and must not be echoed")
		})
	}
}
