package idempotency_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
)

func TestScopeValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		scope idempotency.Scope
		ok    bool
	}{
		{"Simple", idempotency.Scope{Principal: "user-42", Operation: "topup.create"}, true},
		{"ThreeSegments", idempotency.Scope{Principal: "tenant:7/user:9", Operation: "wallet.credit_line.grant"}, true},
		{"DigitsInSegment", idempotency.Scope{Principal: "u", Operation: "v2.order_3.create"}, true},
		{"UnicodePrincipal", idempotency.Scope{Principal: "用户42", Operation: "topup.create"}, true},
		{"MaxLengths", idempotency.Scope{Principal: strings.Repeat("p", idempotency.PrincipalMaxLen), Operation: "a." + strings.Repeat("b", idempotency.OperationMaxLen-2)}, true},
		{"EmptyPrincipal", idempotency.Scope{Operation: "topup.create"}, false},
		{"LongPrincipal", idempotency.Scope{Principal: strings.Repeat("p", idempotency.PrincipalMaxLen+1), Operation: "topup.create"}, false},
		{"SpaceInPrincipal", idempotency.Scope{Principal: "user 42", Operation: "topup.create"}, false},
		{"ControlInPrincipal", idempotency.Scope{Principal: "user\n42", Operation: "topup.create"}, false},
		{"InvalidUTF8Principal", idempotency.Scope{Principal: "user\xff", Operation: "topup.create"}, false},
		{"EmptyOperation", idempotency.Scope{Principal: "u"}, false},
		{"OneSegment", idempotency.Scope{Principal: "u", Operation: "topup"}, false},
		{"Uppercase", idempotency.Scope{Principal: "u", Operation: "Topup.create"}, false},
		{"LeadingDot", idempotency.Scope{Principal: "u", Operation: ".topup.create"}, false},
		{"TrailingDot", idempotency.Scope{Principal: "u", Operation: "topup.create."}, false},
		{"DoubleDot", idempotency.Scope{Principal: "u", Operation: "topup..create"}, false},
		{"SegmentStartsWithDigit", idempotency.Scope{Principal: "u", Operation: "topup.2create"}, false},
		{"Colon", idempotency.Scope{Principal: "u", Operation: "topup:create"}, false},
		{"LongOperation", idempotency.Scope{Principal: "u", Operation: "a." + strings.Repeat("b", idempotency.OperationMaxLen-1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := tt.scope.Validate()
			if tt.ok {
				require.NoError(t, err, "scope %+v", tt.scope)
				return
			}
			require.ErrorIs(t, err, idempotency.ErrScopeInvalid, "scope %+v", tt.scope)
		})
	}
}

func TestScopeString(t *testing.T) {
	t.Parallel()

	s := idempotency.Scope{Principal: "user:42", Operation: "topup.create"}
	require.Equal(t, "topup.create:user:42", s.String())

	// A valid Operation has no ':', so the first ':' splits the two back.
	op, principal, ok := strings.Cut(s.String(), ":")
	require.True(t, ok)
	require.Equal(t, s, idempotency.Scope{Principal: principal, Operation: op})
}
