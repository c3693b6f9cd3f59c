package idempotency

import "fmt"

// VersionConflictError reports an optimistic-lock update ("... WHERE id = ?
// AND version = ?") whose expected version is not the stored one. It
// matches ErrVersionConflict.
type VersionConflictError struct {
	// Expected is the version the caller read and sent.
	Expected int64
	// Actual is the version stored now.
	Actual int64
}

// Error implements error.
func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("version conflict: expected %d, current is %d: re-read and apply the change again", e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrVersionConflict) true.
func (e *VersionConflictError) Is(target error) bool { return target == ErrVersionConflict }

// CheckVersion returns nil when expected equals actual and a
// *VersionConflictError otherwise.
func CheckVersion(expected, actual int64) error {
	if expected != actual {
		return &VersionConflictError{Expected: expected, Actual: actual}
	}
	return nil
}
