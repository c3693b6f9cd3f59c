package idempotency

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Bounds on Scope fields, so a scope always fits an indexed column.
const (
	// PrincipalMaxLen is the longest Principal in bytes.
	PrincipalMaxLen = 128
	// OperationMaxLen is the longest Operation in bytes.
	OperationMaxLen = 64
)

// Scope is the namespace a request key is unique in: the same key sent by two
// principals, or for two operations, names two different commands.
type Scope struct {
	// Principal is the authenticated caller (user, tenant or client id):
	// 1..PrincipalMaxLen bytes of printable UTF-8 without spaces.
	Principal string
	// Operation is the command's stable name, dot-separated lowercase
	// segments such as "topup.create" or "wallet.credit_line.grant": at least
	// two segments, each [a-z][a-z0-9_]*, at most OperationMaxLen bytes.
	Operation string
}

// Validate reports whether s is well formed. It returns an error wrapping
// ErrScopeInvalid that says which field is wrong and why.
func (s Scope) Validate() error {
	if err := validatePrincipal(s.Principal); err != nil {
		return fmt.Errorf("%w: principal %w", ErrScopeInvalid, err)
	}
	if err := validateOperation(s.Operation); err != nil {
		return fmt.Errorf("%w: operation %q %w", ErrScopeInvalid, s.Operation, err)
	}
	return nil
}

// String renders s as "operation:principal". Operation never contains ':',
// so the first ':' always separates the two and distinct scopes never render
// alike.
func (s Scope) String() string { return s.Operation + ":" + s.Principal }

func validatePrincipal(p string) error {
	switch {
	case p == "":
		return errors.New("is empty")
	case len(p) > PrincipalMaxLen:
		return fmt.Errorf("is %d bytes, want at most %d", len(p), PrincipalMaxLen)
	case !utf8.ValidString(p):
		return errors.New("is not valid UTF-8")
	}
	for i, r := range p {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("has a space or control character at byte %d", i)
		}
	}
	return nil
}

func validateOperation(op string) error {
	if op == "" || len(op) > OperationMaxLen {
		return fmt.Errorf("must be 1..%d bytes", OperationMaxLen)
	}
	segments, segStart := 1, true
	for i := 0; i < len(op); i++ {
		c := op[i]
		switch {
		case c == '.':
			if segStart {
				return fmt.Errorf("has an empty segment at byte %d", i)
			}
			segments, segStart = segments+1, true
			continue
		case c >= 'a' && c <= 'z':
		case (c >= '0' && c <= '9') || c == '_':
			if segStart {
				return fmt.Errorf("has a segment not starting with a-z at byte %d", i)
			}
		default:
			return fmt.Errorf("has a character outside [a-z0-9_.] at byte %d", i)
		}
		segStart = false
	}
	switch {
	case segStart:
		return errors.New("ends with '.'")
	case segments < 2:
		return errors.New("needs at least two segments like \"topup.create\"")
	}
	return nil
}
