package auth

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// SubjectMaxLen is the longest subject ("sub") a token may carry, in bytes.
// It equals the idempotency principal's limit, so every subject that
// authenticates also scopes idempotency keys and fits every column.
const SubjectMaxLen = 128

// SubjectFormat describes an acceptable subject for messages and docs.
const SubjectFormat = "1-128 bytes of printable UTF-8 without whitespace or control characters"

// ErrSubjectInvalid is returned (wrapping ErrUnauthenticated) for a token
// whose signature is valid but whose subject breaks SubjectFormat. The
// subject format is decided here, once, so nothing downstream (idempotency
// scopes, SQL) meets a subject it cannot store.
var ErrSubjectInvalid = fmt.Errorf("%w: token subject is not %s", ErrUnauthenticated, SubjectFormat)

// ValidateSubject returns nil for a subject in SubjectFormat, else an error
// wrapping ErrSubjectInvalid (the subject itself is never quoted).
func ValidateSubject(sub string) error {
	switch {
	case sub == "", len(sub) > SubjectMaxLen:
		return fmt.Errorf("%w (length %d)", ErrSubjectInvalid, len(sub))
	case !utf8.ValidString(sub):
		return fmt.Errorf("%w (not UTF-8)", ErrSubjectInvalid)
	}
	for i, r := range sub {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w (byte %d)", ErrSubjectInvalid, i+1)
		}
	}
	return nil
}

// isSubjectInvalid reports whether err is a subject-format failure.
func isSubjectInvalid(err error) bool { return errors.Is(err, ErrSubjectInvalid) }
