package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
)

// adapterError is how an adapter marks its own errors without our constructors.
type adapterError struct {
	permanent bool
	code      string
}

func (e adapterError) Error() string     { return "adapter: " + e.code }
func (e adapterError) Permanent() bool   { return e.permanent }
func (e adapterError) ErrorCode() string { return e.code }

func TestClassify(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		err       error
		wantClass outbox.Class
		wantCode  string
		wantMsg   string
	}{
		{"Nil", nil, outbox.ClassTransient, "", ""},
		{"Plain", errors.New("dial tcp 10.0.0.1:6379: refused"), outbox.ClassTransient, outbox.DefaultErrorCode, "dial tcp 10.0.0.1:6379: refused"},
		{"Context", context.DeadlineExceeded, outbox.ClassTransient, outbox.DefaultErrorCode, "context deadline exceeded"},
		{"Transient", outbox.Transient("QUEUE_UNAVAILABLE", "redis down"), outbox.ClassTransient, "QUEUE_UNAVAILABLE", "redis down"},
		{"Permanent", outbox.Permanent("PAYLOAD_REFUSED", "bad payload"), outbox.ClassPermanent, "PAYLOAD_REFUSED", "bad payload"},
		{"WrappedPermanent", fmt.Errorf("enqueue: %w", outbox.Permanent("PAYLOAD_REFUSED", "bad")), outbox.ClassPermanent, "PAYLOAD_REFUSED", "bad"},
		{"JoinedPermanent", errors.Join(errors.New("x"), outbox.Permanent("P", "p")), outbox.ClassPermanent, "P", "p"},
		{"AdapterPermanent", adapterError{permanent: true, code: "TASK_TOO_BIG"}, outbox.ClassPermanent, "TASK_TOO_BIG", "adapter: TASK_TOO_BIG"},
		{"AdapterTransient", adapterError{code: "BUSY"}, outbox.ClassTransient, "BUSY", "adapter: BUSY"},
		{"LowercaseCode", outbox.Transient("queue_down", "m"), outbox.ClassTransient, outbox.DefaultErrorCode, "m"},
		{"EmptyCode", outbox.Permanent("", "m"), outbox.ClassPermanent, outbox.DefaultErrorCode, "m"},
		{"LongCode", outbox.Transient("A"+strings.Repeat("B", 64), "m"), outbox.ClassTransient, outbox.DefaultErrorCode, "m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.wantClass, outbox.Classify(tt.err), "err %v", tt.err)
			require.Equal(t, tt.wantClass == outbox.ClassPermanent, outbox.IsPermanent(tt.err), "err %v", tt.err)
			require.Equal(t, tt.wantCode, outbox.ErrorCode(tt.err), "err %v", tt.err)
			require.Equal(t, tt.wantMsg, outbox.ErrorMessage(tt.err), "err %v", tt.err)
		})
	}
}

func TestClassString(t *testing.T) {
	t.Parallel()

	require.Equal(t, "transient", outbox.ClassTransient.String())
	require.Equal(t, "permanent", outbox.ClassPermanent.String())
	require.Equal(t, "class(0)", outbox.Class(0).String())
	require.Equal(t, "PAYLOAD_REFUSED: bad", outbox.Permanent("PAYLOAD_REFUSED", "bad").Error())
}

func TestSafeMessage(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, in, want string
	}{
		{"Short", "queue down", "queue down"},
		{"Empty", "", ""},
		{"Control", "line1\nline2\t\x00\x7f", "line1 line2   "},
		{"InvalidUTF8", "a\xffb", "a\uFFFDb"},
		{"ExactLimit", strings.Repeat("a", outbox.MaxErrorMessageBytes), strings.Repeat("a", outbox.MaxErrorMessageBytes)},
		{"OverLimit", strings.Repeat("a", outbox.MaxErrorMessageBytes+1), strings.Repeat("a", outbox.MaxErrorMessageBytes)},
		// 511 ASCII bytes then a 3-byte rune: cutting at 512 would split it.
		{"NoSplitRune", strings.Repeat("a", 511) + "错误", strings.Repeat("a", 511)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got := outbox.SafeMessage(tt.in)
			require.Equal(t, tt.want, got, "input %q", tt.in)
			require.LessOrEqual(t, len(got), outbox.MaxErrorMessageBytes)
			require.True(t, utf8.ValidString(got), "output %q", got)
		})
	}

	t.Run("LongErrorTruncated", func(t *testing.T) {
		t.Parallel()

		err := errors.New(strings.Repeat("长", 1000))
		msg := outbox.ErrorMessage(err)
		require.Len(t, msg, 510) // 170 three-byte runes
		require.True(t, utf8.ValidString(msg))
	})
}
