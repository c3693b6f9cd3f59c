package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// paramsDomain separates a sum bound to path parameters from every body sum.
const paramsDomain = "path-params\x00"

// WithParams binds f to the route's path parameters (name to value as the
// router gives it, e.g. card_id of POST /cards/:card_id/status-changes), so
// one key and body sent for another resource is another command. The sum
// covers the parameters sorted by name, then f's sum; the version stays
// f's, since it names how the body is read and a route's parameters are
// fixed per operation. With no parameters (or a zero f) it returns f, so
// the fingerprints of routes without path parameters never change.
func (f Fingerprint) WithParams(params map[string]string) Fingerprint {
	if len(params) == 0 || f.IsZero() {
		return f
	}
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(paramsDomain)
	for _, name := range names { // length-prefixed: no two parameter sets encode alike
		for _, s := range []string{name, params[name]} {
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteByte(':')
			b.WriteString(s)
		}
	}
	b.WriteByte(0)
	b.WriteString(f.Sum)
	sum := sha256.Sum256([]byte(b.String()))
	return Fingerprint{Version: f.Version, Sum: hex.EncodeToString(sum[:])}
}
