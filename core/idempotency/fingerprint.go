package idempotency

import (
	"fmt"
	"strconv"
	"strings"
)

// FingerprintVersion identifies a fingerprint algorithm: canonical form,
// hash and rendering. A stored fingerprint is only ever compared with one
// recomputed by the same version.
type FingerprintVersion int

// FingerprintV1 is SHA-256 over the canonical JSON described on
// Fingerprinter, rendered as "v1:<64 lowercase hex>".
const FingerprintV1 FingerprintVersion = 1

// String renders v as "v1".
func (v FingerprintVersion) String() string { return "v" + strconv.Itoa(int(v)) }

// FingerprintV3 is FingerprintV1's canonical JSON with one change: the
// volatile list names top-level transport fields only, and by default it is
// empty. A nested field called "time" or "sign" is business data (a payment's
// "pay_time", a login's "sign" inside a signed payload) and always counts;
// a route that sends top-level transport fields (a timestamp, a nonce) names
// them in FingerprinterConfig.Volatile. Rendered as "v3:<64 lowercase hex>".
const FingerprintV3 FingerprintVersion = 3

// supported reports whether a Fingerprinter can compute v (v2 is computed
// by FromCommand, not by a Fingerprinter).
func (v FingerprintVersion) supported() bool { return v == FingerprintV1 || v == FingerprintV3 }

// Fingerprint is a versioned digest of a request's business content. The
// zero value means "none" and never equals anything.
type Fingerprint struct {
	// Version is the algorithm that produced Sum.
	Version FingerprintVersion
	// Sum is the digest in lowercase hex.
	Sum string
}

// String renders f as "v1:<hex>", the form stored in the database.
func (f Fingerprint) String() string { return f.Version.String() + ":" + f.Sum }

// IsZero reports whether f is the zero value.
func (f Fingerprint) IsZero() bool { return f == Fingerprint{} }

// Equal reports whether f and other are the same digest by the same version.
// Fingerprints of different versions are never equal: to compare with a
// stored fingerprint, recompute the incoming one with a Fingerprinter whose
// Version matches the stored one. A zero fingerprint equals nothing.
func (f Fingerprint) Equal(other Fingerprint) bool {
	return !f.IsZero() && f == other
}

// RefingerprintFunc recomputes the incoming request's fingerprint with
// version v, to compare it with a record (or a concurrent holder) whose
// fingerprint v produced. It returns an error when it cannot compute v for
// this request (e.g. FingerprintV2 on a route that declares no command).
type RefingerprintFunc func(v FingerprintVersion) (Fingerprint, error)

// InVersion returns incoming as version v computes it: incoming itself when
// it is of version v; else refp(v) when refp is set and succeeds; else
// incoming, which then equals no fingerprint of version v. Compare a stored
// fingerprint with InVersion(stored.Version, incoming, refp), so a
// byte-identical retry of a record stored before a version change (an
// upgrade, a route that starts declaring its command) still replays.
func InVersion(v FingerprintVersion, incoming Fingerprint, refp RefingerprintFunc) Fingerprint {
	if incoming.Version == v || v == 0 || refp == nil {
		return incoming
	}
	if fp, err := refp(v); err == nil && fp.Version == v {
		return fp
	}
	return incoming
}

// ParseFingerprint parses the String form. It returns an error wrapping
// ErrFingerprintMalformed for bad syntax and ErrUnsupportedVersion for a
// version this build cannot recompute (e.g. a v2 row read after a rollback).
func ParseFingerprint(s string) (Fingerprint, error) {
	ver, sum, ok := strings.Cut(s, ":")
	if !ok || len(ver) < 2 || ver[0] != 'v' {
		return Fingerprint{}, fmt.Errorf("parse fingerprint: %w: want \"v1:<64 hex>\"", ErrFingerprintMalformed)
	}
	n, err := strconv.Atoi(ver[1:])
	if err != nil || n <= 0 || ver[1] == '0' || ver[1] == '+' {
		return Fingerprint{}, fmt.Errorf("parse fingerprint: %w: version %q is not v<positive integer>", ErrFingerprintMalformed, ver)
	}
	v := FingerprintVersion(n)
	if !v.supported() && v != FingerprintV2 {
		return Fingerprint{}, fmt.Errorf("parse fingerprint: %w: %s (this build computes %s, %s and %s)", ErrUnsupportedVersion, v, FingerprintV1, FingerprintV2, FingerprintV3)
	}
	if len(sum) != 64 || !lowerHex(sum) {
		return Fingerprint{}, fmt.Errorf("parse fingerprint: %w: sum is not 64 lowercase hex digits", ErrFingerprintMalformed)
	}
	return Fingerprint{Version: v, Sum: sum}, nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
