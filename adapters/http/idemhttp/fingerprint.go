package idemhttp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/july/template/core/idempotency"
)

// rawDomain prefixes the hash of a non-JSON body. Canonical JSON never
// starts with a NUL byte, so a raw-body sum never equals a JSON one.
const rawDomain = "raw\x00"

// readBody reads the whole request body and puts an identical reader back
// for the handler. The body is bounded by httpx.BodyLimit; an oversized body
// returns *http.MaxBytesError, which the error handler renders as 413.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// fingerprintBody fingerprints a JSON body (application/json or any
// "+json" type) canonically with fp, so whitespace, key order and volatile
// fields do not matter. Every other body (multipart uploads, forms, empty)
// is fingerprinted over its raw bytes: SHA-256 of rawDomain+body with fp's
// version label, so only a byte-identical retry matches (a multipart retry
// must reuse the same boundary).
func fingerprintBody(fp *idempotency.Fingerprinter, contentType string, body []byte) (idempotency.Fingerprint, error) {
	if isJSON(contentType) {
		return fp.FromJSON(body)
	}
	h := sha256.New()
	h.Write([]byte(rawDomain))
	h.Write(body)
	return idempotency.Fingerprint{Version: fp.Version(), Sum: hex.EncodeToString(h.Sum(nil))}, nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == mimeJSON || strings.HasSuffix(mt, "+json")
}

const mimeJSON = "application/json"
