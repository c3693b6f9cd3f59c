package idempotency

import "fmt"

// The published request-key format. UUIDs (36), ULIDs (26) and most
// client-generated order numbers fit it. The key is validated before any
// lookup so malformed input never reaches storage.
const (
	// KeyMinLen is the shortest accepted key, long enough to make accidental
	// collisions between a caller's own requests unlikely.
	KeyMinLen = 8
	// KeyMaxLen is the longest accepted key, so it fits an indexed column.
	KeyMaxLen = 128
	// KeyFormat describes the format for error messages and API docs.
	KeyFormat = "8-128 characters from A-Z a-z 0-9 . _ : -"
)

// KeyFormatError says why a non-empty key was rejected. It never echoes the
// key, which is untrusted input. It matches ErrKeyMalformed.
type KeyFormatError struct {
	// Reason is a short lowercase explanation, e.g. "too short".
	Reason string
	// Len is the key's length in bytes.
	Len int
	// Pos is the byte offset of the first bad character, or -1.
	Pos int
}

// Error implements error.
func (e *KeyFormatError) Error() string {
	if e.Pos >= 0 {
		return fmt.Sprintf("idempotency key malformed: %s at byte %d: want %s", e.Reason, e.Pos, KeyFormat)
	}
	return fmt.Sprintf("idempotency key malformed: %s (%d bytes): want %s", e.Reason, e.Len, KeyFormat)
}

// Is makes errors.Is(err, ErrKeyMalformed) true.
func (e *KeyFormatError) Is(target error) bool { return target == ErrKeyMalformed }

// ValidateKey checks a request key against KeyFormat. It returns
// ErrKeyMissing for "" and a *KeyFormatError for anything else that does not
// match. Callers trim header whitespace before calling; the key is compared
// byte for byte, so it is case-sensitive.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return ErrKeyMissing
	case len(key) < KeyMinLen:
		return &KeyFormatError{Reason: "too short", Len: len(key), Pos: -1}
	case len(key) > KeyMaxLen:
		return &KeyFormatError{Reason: "too long", Len: len(key), Pos: -1}
	}
	for i := 0; i < len(key); i++ {
		if !keyByte(key[i]) {
			return &KeyFormatError{Reason: "character outside the alphabet", Len: len(key), Pos: i}
		}
	}
	return nil
}

func keyByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c == '.', c == '_', c == ':', c == '-':
		return true
	}
	return false
}
