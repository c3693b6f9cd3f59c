package outbox

import (
	"regexp"
	"testing"
)

// The hand-written matchers accept exactly what their patterns accept.
func FuzzMatchersAgreeWithTheirPatterns(f *testing.F) {
	eventTypeRE := regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for _, s := range []string{"", "a", "a.b", "topup.created", "a..b", ".a.b", "a.b.", "A.b", "a.B", "a.1b", "a1_.b_2",
		"a.b.c_d.e9", "a.b\n", "a-b.c", "0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1b", "0B7E6F2A-5C1D-4E8F-9A3B-2C4D6E8F0A1B",
		"0b7e6f2a5c1d-4e8f-9a3b-2c4d6e8f0a1b-", "0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1", "0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1bb",
		"0b7e6f2a-5c1d-4e8f-9a3g-2c4d6e8f0a1b", "00000000-0000-0000-0000-000000000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := IsEventType(s), eventTypeRE.MatchString(s); got != want {
			t.Fatalf("IsEventType(%q) = %t, the pattern says %t", s, got, want)
		}
		if got, want := isCanonicalUUID(s), uuidRE.MatchString(s); got != want {
			t.Fatalf("isCanonicalUUID(%q) = %t, the pattern says %t", s, got, want)
		}
	})
}
