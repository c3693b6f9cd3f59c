package redaction

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// numPolicies bounds the per-policy tables.
const numPolicies = int(PolicyConfig) + 1

// defaultRegistry is immutable: Registry has no mutating methods.
var defaultRegistry = NewRegistry()

// Registry is an immutable, compiled rule table (see Rule). It is safe for
// concurrent use.
type Registry struct {
	rules    []Rule
	policies [numPolicies]*ruleSet
}

// ruleSet is the rule table compiled for one policy.
type ruleSet struct {
	names map[string]bool // joined name -> allowed (true) or sensitive (false)
	words map[string][][]string
	parts [][]byte
	// first marks the first bytes of parts, so one pass over the key
	// tests them all.
	first [256]bool
}

// NewRegistry returns the built-in rules plus extra names, each a Name rule.
func NewRegistry(extra ...string) *Registry {
	rules := slices.Clone(BuiltinRules)
	for _, n := range extra {
		rules = append(rules, Name(n))
	}
	return compile(rules)
}

// With returns a registry with r's rules and more: a domain's own
// sensitive names (Word("member", "no")) or allow-list entries
// (Allowed("coupon_code")). Later allow rules win over earlier ones.
func (r *Registry) With(rules ...Rule) *Registry {
	return compile(append(slices.Clone(r.rules), rules...))
}

func compile(rules []Rule) *Registry {
	r := &Registry{rules: rules}
	for p := range numPolicies {
		s := &ruleSet{names: map[string]bool{}, words: map[string][][]string{}}
		for _, rule := range rules {
			if len(rule.Policies) > 0 && !slices.Contains(rule.Policies, Policy(p)) {
				continue
			}
			switch {
			case rule.Name != "":
				n := normalise(rule.Name)
				if allowed, seen := s.names[n]; !seen || !allowed {
					s.names[n] = rule.Allow
				}
			case len(rule.Words) > 0:
				s.words[rule.Words[0]] = append(s.words[rule.Words[0]], rule.Words[1:])
				// Joined, the words are a name too: CookIe splits oddly but
				// is still "cookie".
				if n := strings.Join(rule.Words, ""); !s.names[n] {
					s.names[n] = false
				}
			case rule.Part != "":
				part := normalise(rule.Part)
				s.parts = append(s.parts, []byte(part))
				s.first[part[0]] = true
			}
		}
		r.policies[p] = s
	}
	return r
}

// Default returns the built-in registry. It is shared and immutable.
func Default() *Registry { return defaultRegistry }

// IsSensitive reports whether values stored under key must be redacted
// under PolicyDefault.
func (r *Registry) IsSensitive(key string) bool {
	return r.matcher(PolicyDefault).sensitive([]byte(key))
}

// Rules returns a copy of the registry's rule table.
func (r *Registry) Rules() []Rule { return slices.Clone(r.rules) }

func (r *Registry) matcher(p Policy) matcher {
	if int(p) < 0 || int(p) >= numPolicies {
		p = PolicyDefault
	}
	return matcher{set: r.policies[p], builtin: denySets[p]}
}

// matcher answers for one policy of a registry.
type matcher struct {
	set *ruleSet
	// builtin is the policy's safe set when it is default-deny, nil otherwise.
	builtin *Fields
	safe    *Fields // the route's declared safe set, if any
	hashKey []byte  // keys the hashes of correlated fields
	// login is a login request (or query): its "code" is never a result code.
	login bool
}

// deny reports a default-deny policy.
func (m matcher) deny() bool { return m.builtin != nil }

// maxWords bounds the words kept per key; longer keys are matched on
// their first maxWords words plus the joined form.
const maxWords = 16

// key is a key split into words: joined holds them lowercased and
// concatenated, ends[i] is where word i ends.
type key struct {
	joined []byte
	ends   [maxWords]uint16
	n      int
}

func (k *key) word(i int) []byte {
	start := uint16(0)
	if i > 0 {
		start = k.ends[i-1]
	}
	return k.joined[start:k.ends[i]]
}

// split fills k from raw: words break at ASCII separators, before a
// capital after a lower-case letter or a digit (bankCard, h5Url) and before
// the last capital of a run (IDCard), never between letters and digits (cvv2);
// a run of non-ASCII runes is one word.
func (k *key) split(raw []byte) {
	k.joined, k.n = splitWords(k.joined, raw, &k.ends)
}

// splitWords appends raw's words to joined and records where each ends.
// It is a function of its arguments, not a method, so that a caller's
// stack buffer does not escape.
func splitWords(joined, raw []byte, ends *[maxWords]uint16) ([]byte, int) {
	n, prevClass, wordStart := 0, 0, len(joined)
	end := func(joined []byte) {
		if len(joined) > wordStart && n < maxWords && len(joined) <= 0xffff {
			ends[n] = uint16(len(joined))
			n++
		}
		wordStart = len(joined)
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		if c >= utf8.RuneSelf {
			ru, size := utf8.DecodeRune(raw[i:])
			i += size
			lo := unicode.ToLower(ru)
			if lo < utf8.RuneSelf { // e.g. the Kelvin sign lowers to 'k'
				if prevClass == classOther {
					end(joined)
				}
				joined = append(joined, byte(lo))
				prevClass = classLower
				continue
			}
			if prevClass != classOther {
				end(joined)
			}
			joined = utf8.AppendRune(joined, lo)
			prevClass = classOther
			continue
		}
		cl := asciiClass[c]
		switch {
		case cl == classSep:
			end(joined)
		case cl == classUpper && (prevClass == classLower || prevClass == classDigit),
			cl == classUpper && prevClass == classUpper && i+1 < len(raw) && raw[i+1] < utf8.RuneSelf && asciiClass[raw[i+1]] == classLower,
			cl != classOther && prevClass == classOther:
			end(joined)
		}
		if cl == classUpper {
			joined = append(joined, c+'a'-'A')
		} else if cl != classSep {
			joined = append(joined, c)
		}
		prevClass = cl
		i++
	}
	end(joined)
	return joined, n
}

const (
	classSep = iota
	classLower
	classUpper
	classDigit
	classOther // non-ASCII
)

var asciiClass = func() (t [utf8.RuneSelf]int) {
	for c := range utf8.RuneSelf {
		switch {
		case 'a' <= c && c <= 'z':
			t[c] = classLower
		case 'A' <= c && c <= 'Z':
			t[c] = classUpper
		case '0' <= c && c <= '9':
			t[c] = classDigit
		}
	}
	return t
}()

// sensitive reports whether values under raw are redacted.
func (m matcher) sensitive(raw []byte) bool {
	s, _ := m.lookup(raw)
	return s
}

// lookup reports whether raw is sensitive and whether it is allow-listed.
func (m matcher) lookup(raw []byte) (sensitive, allowed bool) {
	var buf [64]byte
	var k key
	k.joined, k.n = splitWords(buf[:0], raw, &k.ends)
	if len(k.joined) == 0 {
		return false, false
	}
	s := m.set
	if a, ok := s.names[string(k.joined)]; ok {
		return !a, a
	}
	if len(k.joined) > 1 && k.joined[0] == 'x' {
		if a, ok := s.names[string(k.joined[1:])]; ok && !a {
			return true, false // X-Sign is sign
		}
	}
	for i, c := range k.joined {
		if !s.first[c] {
			continue
		}
		for _, p := range s.parts {
			if p[0] == c && bytes.HasPrefix(k.joined[i:], p) {
				return true, false
			}
		}
	}
	for i := range k.n {
		if s.wordsFrom(&k, i) {
			return true, false
		}
	}
	return false, false
}

// wordsFrom reports a word rule matching k's words from i on.
func (s *ruleSet) wordsFrom(k *key, i int) bool {
	w := k.word(i)
	seqs, ok := s.words[string(w)]
	if !ok {
		t := trimDigits(w)
		if len(t) == len(w) || len(t) == 0 {
			return false
		}
		if seqs, ok = s.words[string(t)]; !ok {
			return false
		}
	}
next:
	for _, rest := range seqs {
		if i+len(rest) >= k.n {
			continue
		}
		for j, want := range rest {
			if w := k.word(i + 1 + j); string(w) != want && string(trimDigits(w)) != want {
				continue next
			}
		}
		return true
	}
	return false
}

// trimDigits drops a word's trailing digits: cvv2 is cvv.
func trimDigits(w []byte) []byte {
	n := len(w)
	for n > 0 && isDigit(w[n-1]) {
		n--
	}
	return w[:n]
}

// normalise returns the joined form of key.
func normalise(s string) string {
	k := key{}
	k.split([]byte(s))
	return string(k.joined)
}
