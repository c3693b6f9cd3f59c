package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// FingerprintV2 is SHA-256 over the JSON of a create command's declared,
// typed business fields (FromCommand), rendered as "v2:<64 lowercase hex>".
// Unlike FingerprintV1 it ignores everything the route did not declare:
// unknown and transport fields at any depth, key order, whitespace and
// number spelling; and a declared field counts whatever its name.
const FingerprintV2 FingerprintVersion = 2

// commandDomain separates v2 sums from every other hash of the same bytes.
const commandDomain = "command-v2\x00"

// FromCommand fingerprints cmd, the route's typed command: a struct whose
// exported JSON fields are exactly the business fields (e.g. amount and
// channel of a top-up), decoded and normalised by the route. Its JSON
// encoding is deterministic (struct field order, sorted map keys), so equal
// commands have equal fingerprints. Raw bytes, raw JSON and strings are
// refused: they would hash the transport form again.
func FromCommand(cmd any) (Fingerprint, error) {
	switch cmd.(type) {
	case nil, []byte, json.RawMessage, string:
		return Fingerprint{}, fmt.Errorf("fingerprint command: %T is not a typed command; pass the route's command struct", cmd)
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return Fingerprint{}, fmt.Errorf("fingerprint command: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(commandDomain))
	h.Write(b)
	return Fingerprint{Version: FingerprintV2, Sum: hex.EncodeToString(h.Sum(nil))}, nil
}
