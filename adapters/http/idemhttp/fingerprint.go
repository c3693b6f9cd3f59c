package idemhttp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"strings"

	"github.com/july/template/core/idempotency"
)

// rawDomain prefixes the hash of a non-JSON body. Canonical JSON never
// starts with a NUL byte, so a raw-body sum never equals a JSON one.
const rawDomain = "raw\x00"

// fingerprint is the route's command fingerprint when it declares one and
// the body decodes, else fingerprintBody.
func fingerprint(cfg Config, contentType string, body []byte) (idempotency.Fingerprint, error) {
	if cfg.Command != nil {
		if cmd, err := cfg.Command(body); err == nil {
			return idempotency.FromCommand(cmd)
		}
	}
	return fingerprintBody(cfg.Fingerprinter, contentType, body)
}

// fingerprintBody fingerprints a request body with fp's version label:
//
//   - JSON (application/json or any "+json" type): canonically with fp, so
//     whitespace, key order and volatile fields do not matter;
//   - multipart/form-data: its parsed parts ("multipart-v1", see
//     multipartSum), so a retry with a new boundary matches; a malformed
//     body is an error (400), like invalid JSON, rather than a raw-byte
//     fallback that would let the handler see a body it cannot parse;
//   - anything else (forms, empty): SHA-256 of rawDomain+body, so only a
//     byte-identical retry matches.
func fingerprintBody(fp *idempotency.Fingerprinter, contentType string, body []byte) (idempotency.Fingerprint, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	switch {
	case err == nil && (mt == mimeJSON || strings.HasSuffix(mt, "+json")):
		return fp.FromJSON(body)
	case err == nil && mt == mimeMultipartForm:
		sum, err := multipartSum(params["boundary"], body)
		if err != nil {
			return idempotency.Fingerprint{}, fmt.Errorf("%w: %w", errMultipartMalformed, err)
		}
		return idempotency.Fingerprint{Version: fp.Version(), Sum: sum}, nil
	}
	h := sha256.New()
	h.Write([]byte(rawDomain))
	h.Write(body)
	return idempotency.Fingerprint{Version: fp.Version(), Sum: hex.EncodeToString(h.Sum(nil))}, nil
}

const (
	mimeJSON          = "application/json"
	mimeMultipartForm = "multipart/form-data"
)
