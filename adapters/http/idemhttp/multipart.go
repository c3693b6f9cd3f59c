package idemhttp

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"slices"
	"strings"
)

// multipartDomain prefixes the hash of a multipart body's canonical form
// ("multipart-v1"). Neither canonical JSON nor rawDomain starts with it, so
// the three forms never collide.
const multipartDomain = "multipart\x00"

// maxParts bounds the parts of a fingerprinted multipart body, as
// net/http's ReadForm does by default: more is a 400, not a long loop.
const maxParts = 1000

// errMultipartMalformed marks a multipart/form-data body that cannot be
// fingerprinted; the middleware answers 400 REQUEST_INVALID.
var errMultipartMalformed = errors.New("idemhttp: malformed multipart/form-data body")

// errTooManyParts means a multipart body had more than maxParts parts.
var errTooManyParts = fmt.Errorf("idemhttp: multipart body has more than %d parts", maxParts)

// part is one multipart part in the canonical form. The JSON field names
// are part of the "multipart-v1" form: renaming one changes every stored
// fingerprint.
type part struct {
	Field       string `json:"field"`
	File        string `json:"file"`
	ContentType string `json:"content_type"`
	SHA256      string `json:"sha256"`
}

// multipartSum returns the "multipart-v1" digest of an already buffered
// multipart/form-data body: SHA-256 of multipartDomain followed by the
// JSON array of its parts' (field name, file name, part Content-Type,
// SHA-256 of the decoded content), sorted by field name then file name
// (stably, so repeated fields keep their order). The boundary, preamble,
// epilogue and other part headers are framing and do not count, so a
// client that picks a new boundary per send (curl -F, browsers) still
// retries the same command. Part contents are hashed as they stream, so
// memory beyond the buffered body stays small.
//
// It returns an error for a missing boundary, a malformed body or more
// than maxParts parts; the caller answers 400 REQUEST_INVALID.
func multipartSum(boundary string, body []byte) (string, error) {
	if boundary == "" {
		return "", errors.New("idemhttp: multipart Content-Type has no boundary parameter")
	}
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	var parts []part
	for {
		p, err := r.NextPart()
		if err == io.EOF { // only the final boundary; a truncated body wraps io.EOF
			break
		}
		if err != nil {
			return "", fmt.Errorf("idemhttp: read multipart part: %w", err)
		}
		if len(parts) == maxParts {
			return "", errTooManyParts
		}
		h := sha256.New()
		if _, err := io.Copy(h, p); err != nil {
			return "", fmt.Errorf("idemhttp: read multipart part %q: %w", p.FormName(), err)
		}
		parts = append(parts, part{
			Field:       p.FormName(),
			File:        p.FileName(),
			ContentType: strings.TrimSpace(p.Header.Get("Content-Type")),
			SHA256:      hex.EncodeToString(h.Sum(nil)),
		})
	}
	slices.SortStableFunc(parts, func(a, b part) int {
		return cmp.Or(strings.Compare(a.Field, b.Field), strings.Compare(a.File, b.File))
	})
	canonical, err := json.Marshal(parts)
	if err != nil {
		return "", fmt.Errorf("idemhttp: encode multipart canonical form: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(multipartDomain))
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil)), nil
}
