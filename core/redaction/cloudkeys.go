package redaction

import "strings"

// cloudKeyPrefixes are the published prefixes of provider credentials, with
// the length and alphabet of what follows: AWS access key ids (AKIA
// long-term, ASIA temporary), GitHub tokens and Stripe live keys. The key
// itself is a credential wherever it sits, so it is found by shape.
var cloudKeyPrefixes = []struct {
	prefix   string
	min, max int  // length of the body after the prefix
	upper    bool // body is A-Z and 0-9 only
}{
	{"AKIA", 16, 16, true}, {"ASIA", 16, 16, true},
	{"ghp_", 36, 255, false}, {"gho_", 36, 255, false}, {"ghu_", 36, 255, false},
	{"ghs_", 36, 255, false}, {"ghr_", 36, 255, false}, {"github_pat_", 22, 255, false},
	{"sk_live_", 16, 255, false}, {"rk_live_", 16, 255, false},
}

// hasCloudKey reports a provider access key (see cloudKeyPrefixes) as a
// whole word anywhere in s.
func hasCloudKey(s string) bool {
	for _, p := range cloudKeyPrefixes {
		for i := 0; ; {
			j := strings.Index(s[i:], p.prefix)
			if j < 0 {
				break
			}
			start := i + j
			i = start + len(p.prefix)
			if start > 0 && (isAlnum(s[start-1]) || s[start-1] == '_') {
				continue
			}
			end := i
			for end < len(s) && (isAlnum(s[end]) || !p.upper && s[end] == '_') {
				if p.upper && !('A' <= s[end] && s[end] <= 'Z' || isDigit(s[end])) {
					break
				}
				end++
			}
			if n := end - i; n >= p.min && n <= p.max && (end == len(s) || !isAlnum(s[end])) {
				return true
			}
		}
	}
	return false
}

// cloudKeyAt is mayBeSecret's test at an underscore: does raw[:i+1] end
// with one of the underscore prefixes of cloudKeyPrefixes?
func cloudKeyAt(raw []byte, i int) bool {
	for _, p := range cloudKeyPrefixes {
		n := len(p.prefix)
		if p.prefix[n-1] == '_' && i+1 >= n && string(raw[i+1-n:i+1]) == p.prefix {
			return true
		}
	}
	return false
}
