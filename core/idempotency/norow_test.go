package idempotency_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
)

// status is a stand-in for a business status such as tasks.Status.
type status int16

const (
	pending    status = 1
	processing status = 2
	completed  status = 3
	cancelled  status = 5
)

func allowed(from, to status) bool {
	next := map[status][]status{
		pending:    {processing, cancelled},
		processing: {completed, cancelled, pending},
	}
	return slices.Contains(next[from], to)
}

func TestResolveNoRow(t *testing.T) {
	t.Parallel()

	ptr := func(s status) *status { return &s }
	tests := []struct {
		name      string
		current   *status
		expected  status
		target    status
		allowed   func(from, to status) bool
		want      idempotency.Outcome
		wantErr   error
		wantStale bool
	}{
		{"NotVisible", nil, processing, completed, allowed, idempotency.OutcomeNotVisible, idempotency.ErrNotVisible, false},
		{"AlreadyDone", ptr(completed), processing, completed, allowed, idempotency.OutcomeAlreadyDone, idempotency.ErrAlreadyDone, false},
		{"IllegalFromTerminal", ptr(cancelled), processing, completed, allowed, idempotency.OutcomeIllegalTransition, idempotency.ErrIllegalTransition, false},
		{"IllegalSkip", ptr(pending), processing, completed, allowed, idempotency.OutcomeIllegalTransition, idempotency.ErrIllegalTransition, false},
		{"StaleMovedElsewhere", ptr(processing), pending, cancelled, allowed, idempotency.OutcomeIllegalTransition, idempotency.ErrIllegalTransition, true},
		{"StaleSameAsExpected", ptr(pending), pending, processing, allowed, idempotency.OutcomeIllegalTransition, idempotency.ErrIllegalTransition, true},
		{"NilTableAllowsNothing", ptr(pending), pending, processing, nil, idempotency.OutcomeIllegalTransition, idempotency.ErrIllegalTransition, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := idempotency.ResolveNoRow(tt.current, tt.expected, tt.target, tt.allowed)
			require.Equal(t, tt.want, got, "current %v expected %d target %d", tt.current, tt.expected, tt.target)
			require.ErrorIs(t, err, tt.wantErr, "outcome %s", got)
			if tt.want != idempotency.OutcomeIllegalTransition {
				return
			}
			var ite *idempotency.IllegalTransitionError
			require.True(t, errors.As(err, &ite), "err %v", err)
			require.Equal(t, idempotency.IllegalTransitionError{
				Expected: int16(tt.expected), Current: int16(*tt.current), Target: int16(tt.target), Stale: tt.wantStale,
			}, *ite)
		})
	}
}

func TestResolveNoRowDoesNotRevealExistence(t *testing.T) {
	t.Parallel()

	// A missing row and a row the caller may not see are both passed as nil
	// by the adapter and must produce the identical answer.
	o1, err1 := idempotency.ResolveNoRow[status](nil, pending, processing, allowed)
	o2, err2 := idempotency.ResolveNoRow[status](nil, processing, completed, nil)
	require.Equal(t, o1, o2)
	require.Equal(t, err1.Error(), err2.Error())
}
