package idemhttp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/july/template/core/idempotency"
)

// rawDomain prefixes the hash of a non-JSON body. Canonical JSON never
// starts with a NUL byte, so a raw-body sum never equals a JSON one.
const rawDomain = "raw\x00"

// fingerprint is the route's command fingerprint when it declares one and
// the body decodes, else fingerprintBody. dec is the Command's result, kept
// for the handler (Decoded), so the body is decoded once.
func fingerprint(cfg Config, contentType string, body []byte) (fp idempotency.Fingerprint, dec *decoded, err error) {
	if cfg.Command != nil {
		cmd, cerr := cfg.Command(body)
		dec = &decoded{cmd: cmd, err: cerr}
		if cerr == nil {
			fp, err = idempotency.FromCommand(cmd)
			return fp, dec, err
		}
	}
	fp, err = fingerprintBody(cfg.Fingerprinter, contentType, body)
	return fp, dec, err
}

// decoded is what Config.Command made of a request's body.
type decoded struct {
	cmd any
	err error
}

const decodedKey = "idemhttp.command"

// Decoded returns what the route's Config.Command returned for this
// request's body (the command, or its error), so the handler does not
// decode the body a second time; ok is false when the middleware did not
// run it (no Command, or the request ended before the body was read).
func Decoded(c echo.Context) (cmd any, ok bool, err error) {
	d, ok := c.Get(decodedKey).(*decoded)
	if !ok {
		return nil, false, nil
	}
	return d.cmd, true, d.err
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

// refingerprint recomputes the request's fingerprint with another version:
// v2 by the route's Command, v1 and v3 by cfg.Fingerprinter or the
// Previous one of that version, so a record stored before a version change
// is compared with what that version makes of this request; bound to the
// route's path parameters as the first one was.
func (cfg *Config) refingerprint(contentType string, body []byte, params map[string]string) idempotency.RefingerprintFunc {
	return func(v idempotency.FingerprintVersion) (idempotency.Fingerprint, error) {
		fp, err := cfg.fingerprintAs(v, contentType, body)
		return fp.WithParams(params), err
	}
}

func (cfg *Config) fingerprintAs(v idempotency.FingerprintVersion, contentType string, body []byte) (idempotency.Fingerprint, error) {
	if v == idempotency.FingerprintV2 {
		if cfg.Command == nil {
			return idempotency.Fingerprint{}, fmt.Errorf("refingerprint: %w: the route declares no command", idempotency.ErrUnsupportedVersion)
		}
		cmd, err := cfg.Command(body)
		if err != nil {
			return idempotency.Fingerprint{}, fmt.Errorf("refingerprint: %w", err)
		}
		return idempotency.FromCommand(cmd)
	}
	for _, fp := range append([]*idempotency.Fingerprinter{cfg.Fingerprinter}, cfg.Previous...) {
		if fp.Version() == v {
			return fingerprintBody(fp, contentType, body)
		}
	}
	return idempotency.Fingerprint{}, fmt.Errorf("refingerprint: %w: %s", idempotency.ErrUnsupportedVersion, v)
}

// previousFingerprinters validates Config.Previous and adds the default
// Fingerprinter of every version neither it nor current covers.
func previousFingerprinters(current *idempotency.Fingerprinter, previous []*idempotency.Fingerprinter) ([]*idempotency.Fingerprinter, error) {
	seen := map[idempotency.FingerprintVersion]bool{current.Version(): true}
	out := make([]*idempotency.Fingerprinter, 0, len(previous)+1)
	for i, fp := range previous {
		switch {
		case fp == nil:
			return nil, fmt.Errorf("idemhttp: Config.Previous[%d] is nil", i)
		case seen[fp.Version()]:
			return nil, fmt.Errorf("idemhttp: Config.Previous[%d] repeats version %s (of Fingerprinter or an earlier entry)", i, fp.Version())
		}
		seen[fp.Version()] = true
		out = append(out, fp)
	}
	for _, v := range []idempotency.FingerprintVersion{idempotency.FingerprintV1, idempotency.FingerprintV3} {
		if !seen[v] {
			fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Version: v})
			if err != nil {
				return nil, fmt.Errorf("idemhttp: default fingerprinter %s: %w", v, err)
			}
			out = append(out, fp)
		}
	}
	return out, nil
}

const (
	mimeJSON          = "application/json"
	mimeMultipartForm = "multipart/form-data"
)
