package redaction

// keyCacheSize is the number of memoised keys per document; a power of two.
// Typical API bodies repeat a few dozen distinct keys.
const keyCacheSize = 64

// keyCache memoises key sensitivity within one document, keyed by the raw
// key literal. It is direct-mapped: a colliding key evicts the old one, and
// a hit is confirmed by comparing the whole key, so a collision only costs
// a recomputation.
type keyCache [keyCacheSize]keyEntry

// keyEntry holds its key as a span of the document rather than a slice, so
// that filling it needs no GC write barrier.
type keyEntry struct {
	off, end int // raw literal with its quotes is in[off:end]; end is 0 when empty
	flags    uint16
}

// slot returns the entry raw maps to. The hash reads only the length and
// three bytes: it must be cheaper than the match it saves.
func (c *keyCache) slot(raw []byte) *keyEntry {
	n := len(raw) // at least 2: the quotes
	h := uint32(n)*0x9E3779B1 ^ uint32(raw[1])*0x85EBCA77 ^
		uint32(raw[n/2])*0xC2B2AE3D ^ uint32(raw[n-2])*0x27D4EB2F
	return &c[(h^h>>16)%keyCacheSize]
}
