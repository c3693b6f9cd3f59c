package idempotency_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
)

func TestCheckVersion(t *testing.T) {
	t.Parallel()

	require.NoError(t, idempotency.CheckVersion(3, 3))

	err := idempotency.CheckVersion(3, 4)
	require.ErrorIs(t, err, idempotency.ErrVersionConflict)
	var vc *idempotency.VersionConflictError
	require.True(t, errors.As(err, &vc))
	require.Equal(t, idempotency.VersionConflictError{Expected: 3, Actual: 4}, *vc)
	require.Contains(t, err.Error(), "expected 3, current is 4")
}
