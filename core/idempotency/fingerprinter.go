package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// DefaultVolatileFields returns the transport fields a v1 fingerprint
// excludes unless FingerprinterConfig.Volatile says otherwise: they change
// between retries of one command without changing what it means. A v3
// route picks the ones it really sends at top level. It returns
// a fresh slice, so callers may append their own names.
func DefaultVolatileFields() []string {
	return []string{
		"timestamp", "ts", "time", "nonce",
		"signature", "sign", "sig",
		"token", "access_token",
		"request_id", "idempotency_key",
	}
}

// FingerprinterConfig configures NewFingerprinter.
type FingerprinterConfig struct {
	// Version is the algorithm to compute. Zero means FingerprintV3, the
	// current one; FingerprintV1 is kept to recompute records stored by it.
	Version FingerprintVersion
	// Volatile lists the transport field names dropped, with their values:
	// from the top-level object only in v3, from objects at any depth in
	// v1. Names match ASCII case-insensitively and ignoring every character
	// other than a-z and 0-9, so "requestId", "Request-ID" and "request_id"
	// are one name. Nil means none in v3 and DefaultVolatileFields() in v1;
	// a non-nil empty slice drops nothing.
	//
	// The list is part of the fingerprint: changing it for an operation
	// changes fingerprints of requests already stored, so change it only
	// together with a new Version or after the records' retention window.
	Volatile []string
}

// Fingerprinter computes request fingerprints. It is immutable and safe for
// concurrent use.
//
// The canonical form: the input is parsed as exactly one JSON value
// (invalid JSON, invalid UTF-8, an empty body or trailing data is rejected
// with ErrInvalidInput); object keys are sorted bytewise and volatile keys
// dropped (top level only in v3, at any depth in v1); duplicate keys keep the last value, as encoding/json
// does; whitespace is irrelevant; arrays keep their order; numbers compare by
// exact decimal value, so 1, 1.0, 1.00, 1e0 and 10e-1 are one number (but
// "1" the string is not); strings compare byte for byte after JSON unescaping,
// with no Unicode normalisation, so "é" precomposed and decomposed differ.
type Fingerprinter struct {
	version  FingerprintVersion
	volatile map[string]struct{}
	maxName  int  // longest normalised volatile name; longer keys skip the lookup
	anyDepth bool // v1: volatile names are dropped in nested objects too
}

// NewFingerprinter returns a Fingerprinter for cfg. It returns
// ErrUnsupportedVersion for an unknown version and ErrInvalidInput for a
// volatile name that normalises to nothing (e.g. "" or "--").
func NewFingerprinter(cfg FingerprinterConfig) (*Fingerprinter, error) {
	if cfg.Version == 0 {
		cfg.Version = FingerprintV3
	}
	if !cfg.Version.supported() {
		return nil, fmt.Errorf("new fingerprinter: %w: %s (this build computes %s and %s)", ErrUnsupportedVersion, cfg.Version, FingerprintV3, FingerprintV1)
	}
	anyDepth := cfg.Version == FingerprintV1
	if cfg.Volatile == nil && anyDepth {
		cfg.Volatile = DefaultVolatileFields()
	}
	f := &Fingerprinter{version: cfg.Version, volatile: make(map[string]struct{}, len(cfg.Volatile)), anyDepth: anyDepth}
	for _, name := range cfg.Volatile {
		n := normaliseName(nil, name)
		if len(n) == 0 {
			return nil, fmt.Errorf("new fingerprinter: %w: volatile field name %q has no letters or digits", ErrInvalidInput, name)
		}
		f.volatile[string(n)] = struct{}{}
		f.maxName = max(f.maxName, len(n))
	}
	return f, nil
}

// Version is the algorithm f computes. To compare with a stored fingerprint
// of another version, use a Fingerprinter built with that version.
func (f *Fingerprinter) Version() FingerprintVersion { return f.version }

// FromJSON fingerprints a raw JSON body. It returns an error wrapping
// ErrInvalidInput when body is not exactly one valid UTF-8 JSON value.
func (f *Fingerprinter) FromJSON(body []byte) (Fingerprint, error) {
	if !utf8.Valid(body) {
		return Fingerprint{}, fmt.Errorf("fingerprint: %w: body is not valid UTF-8", ErrInvalidInput)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return Fingerprint{}, fmt.Errorf("fingerprint: %w: body is empty, want a JSON value", ErrInvalidInput)
		}
		return Fingerprint{}, fmt.Errorf("fingerprint: %w: body is not valid JSON: %w", ErrInvalidInput, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Fingerprint{}, fmt.Errorf("fingerprint: %w: body has data after the first JSON value", ErrInvalidInput)
	}
	canon, err := f.appendCanonical(make([]byte, 0, len(body)), v, true)
	if err != nil {
		return Fingerprint{}, fmt.Errorf("fingerprint: %w: %w", ErrInvalidInput, err)
	}
	sum := sha256.Sum256(canon)
	return Fingerprint{Version: f.version, Sum: hex.EncodeToString(sum[:])}, nil
}

// FromValue fingerprints a Go value by marshalling it with encoding/json and
// then applying FromJSON, so a decoded command struct and its raw body give
// the same fingerprint when they carry the same fields. A []byte is refused
// (it would be fingerprinted as a base64 string): pass raw bodies to
// FromJSON.
func (f *Fingerprinter) FromValue(v any) (Fingerprint, error) {
	if _, ok := v.([]byte); ok {
		return Fingerprint{}, fmt.Errorf("fingerprint: %w: got []byte, use FromJSON for raw bodies", ErrInvalidInput)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return Fingerprint{}, fmt.Errorf("fingerprint: %w: cannot marshal %T: %w", ErrInvalidInput, v, err)
	}
	return f.FromJSON(body)
}

// isVolatile reports whether the object key is configured as volatile.
func (f *Fingerprinter) isVolatile(key string) bool {
	var buf [64]byte
	n := normaliseName(buf[:0], key)
	if len(n) > f.maxName {
		return false
	}
	_, ok := f.volatile[string(n)] // no allocation: the compiler optimises m[string(b)]
	return ok
}

// normaliseName appends name to dst with ASCII letters lowercased and every
// byte other than a-z and 0-9 dropped.
func normaliseName(dst []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			dst = append(dst, c)
		}
	}
	return dst
}
