package redaction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// refRedactJSON is the implementation redactJSON replaced: a json.Valid
// pre-pass, then a non-validating walk, with the original key matcher and
// value filter (legacy_test.go). The differential tests below check that
// the new one accepts the same documents and never redacts less.
func refRedactJSON(data []byte, m legacyMatcher) ([]byte, error) {
	if !json.Valid(data) {
		return nil, ErrInvalidJSON
	}
	w := refWalker{scanner: scanner{in: data}, m: m, out: make([]byte, 0, len(data))}
	w.value()
	return w.out, nil
}

type refWalker struct {
	scanner
	m   legacyMatcher
	out []byte
}

func (w *refWalker) value() {
	w.ws()
	switch w.in[w.pos] {
	case '{':
		w.container('}', true)
	case '[':
		w.container(']', false)
	case '"':
		raw := w.str()
		if refMayBeSecret(raw) && w.m.secretValue(unquote(raw)) {
			raw = redactedJSON
		}
		w.out = append(w.out, raw...)
	default:
		w.out = append(w.out, w.literal()...)
	}
}

func (w *refWalker) container(end byte, keyed bool) {
	w.out = append(w.out, w.in[w.pos])
	w.pos++
	w.ws()
	if w.in[w.pos] == end {
		w.out = append(w.out, end)
		w.pos++
		return
	}
	for {
		w.ws()
		if keyed {
			key := w.str()
			w.out = append(w.out, key...)
			w.ws()
			w.pos++ // ':'
			w.out = append(w.out, ':')
			if w.keySensitive(key) {
				w.skip()
				w.out = append(w.out, redactedJSON...)
			} else {
				w.value()
			}
		} else {
			w.value()
		}
		w.ws()
		c := w.in[w.pos]
		w.pos++
		w.out = append(w.out, c)
		if c == end {
			return
		}
	}
}

func (w *refWalker) keySensitive(raw []byte) bool {
	if bytes.IndexByte(raw, '\\') >= 0 {
		return refSensitive(w.m, []byte(unquote(raw)))
	}
	return refSensitive(w.m, raw[1:len(raw)-1])
}

func refSensitive(m legacyMatcher, key []byte) bool {
	var buf [64]byte
	n := legacyAppendNormalised(buf[:0], key)
	return refMatch(m.base, n) || (m.extra != nil && m.extra.exact(n))
}

func refMatch(r *legacyRegistry, n []byte) bool {
	if len(n) == 0 {
		return false
	}
	if r.exact(n) {
		return true
	}
	for _, s := range r.substrings {
		if bytes.Contains(n, s) {
			return true
		}
	}
	return false
}

func refMayBeSecret(raw []byte) bool {
	return len(raw) >= 10 && (bytes.IndexByte(raw, '\\') >= 0 ||
		bytes.IndexByte(raw, '?') >= 0 ||
		bytes.Contains(raw, []byte("eyJ")) ||
		bytes.Contains(raw, []byte("earer ")) ||
		bytes.Contains(raw, []byte("EARER ")) ||
		bytes.Contains(raw, []byte("asic ")) ||
		bytes.Contains(raw, []byte("ASIC ")) ||
		bytes.HasPrefix(raw, []byte(`"data:`)) ||
		len(raw) >= blobMinLen)
}

// refCorpus is hand-written input for the differential tests, including the
// edge cases of JSON validity that the single-pass walker must get right.
var refCorpus = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{"a":1}`, `{"a" : 1 , "b" : [ 1 , 2 ] }`, `{"a":1,}`, `[1,]`,
	`[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{1:2}`, `{'a':1}`, `[1 2]`, `[1,,2]`, `]`, `[`, `{`, `}`,
	`"`, `""`, `"\"`, `"\u00e9"`, `"\u00G0"`, `"\u00e"`, `"\u`, `"\u0`, `"\u00`, `"\u000`, `"\u0000`, `"\`, `"\x"`, `"\/\b\f\n\r\t\\\""`, "\"a\tb\"", "\"\x7f\"",
	"\"\xff\xfe\"", "\"\x00\"", "\"\x1f\"", `0`, `-0`, `-`, `01`, `-01`, `1.`, `.5`, `1.5`, `1e5`, `1E+5`,
	`1e-5`, `1e`, `1e+`, `1.5e3.2`, `+1`, `0x10`, `1_000`, `-0.0e-0`, `123456789012345678901234567890`,
	`true`, `false`, `null`, `tru`, `truex`, `True`, `nul`, `nulll`, `[true,false,null]`, `[truefalse]`,
	"\ufeff{}", "{}\x00", "{} \t\r\n", "\v{}", "{}\f", `{}{}`, `{} 1`, `1 `, ` 1`, `"a" "b"`, `[1]]`, `{"a":1}}`,
	`{"a":[1,{"b":2}]]`, `{"password":}`, `{"password":[1,}`, `{"password":"x"`, `{"password":{"a":1,}}`,
	`{"token":"a","token":"b"}`, `{"x":{"password":"p","ok":[1,"Bearer abcdefghij",{"api-key":3}]}}`,
	`{"pa\u0073sword":"x","\u0070wd":"y","X-Api-Key":"z","a\\b":"c","":""}`,
	`{"url":"https://x.example/a?sign=1&b=2","t":"Basic dXNlcjpwYXNz","j":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"}`,
	`{"d":"data:image/png;base64,iVBORw0KGgo=","q":"/p?access_token=abc","r":"x?y","e":"\u0065yJ"}`,
	`{"密码":"x","用户":"张三","口令x":1,"key密钥":2}`,
	`[{"code":"123456","state":"s","card":"4111","package":"p"}]`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	`{"password":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 9999),
	`"` + strings.Repeat("A", 2000) + `"`,
}

// refInputs is refCorpus plus the seeds and checked-in corpus of the fuzz
// targets, the benchmark bodies and the examples in the test files.
func refInputs(t testing.TB) [][]byte {
	var in [][]byte
	for _, s := range refCorpus {
		in = append(in, []byte(s))
	}
	in = append(in, benchBody(1024), benchBody(50*1000), manyKeys())
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "*", "*"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		in = append(in, b)
	}
	return in
}

// manyKeys is an array of objects with more distinct keys, sensitive and
// not, than keyCache has slots, so that keys must collide and evict.
func manyKeys() []byte {
	var b strings.Builder
	b.WriteString("[")
	for range 3 {
		b.WriteString("{")
		for i, k := range legacyKeys {
			fmt.Fprintf(&b, `%q:1,"k%d":2,"%s_x":3,"a%s":4,`, k, i, k, k)
		}
		b.WriteString(`"end":0},`)
	}
	b.WriteString("{}]")
	return []byte(b.String())
}

// benchBody is orderBody from bench_test.go, which is in the external test
// package.
func benchBody(size int) []byte {
	const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXNlY3JldA"
	var b strings.Builder
	b.WriteString(`{"request_id":"req-01HX","user":{"id":1001,"name":"张三","access_token":"` + jwt + `"},"orders":[`)
	for i := 0; b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"order_no":"O2024%06d","amount":%d.50,"status":3,"channel":"wechat",`+
			`"items":[{"sku":"SKU-%d","qty":2,"tags":["a","b"]},{"sku":"SKU-%d","qty":1,"tags":[]}],`+
			`"payment":{"pay_url":"https://pay.example/p?prepay_id=wx%d","sign":"9F2C%d","result_code":"SUCCESS"},`+
			`"note":"deliver to gate %d"}`, i, 100+i, i, i+1, i, i, i)
	}
	b.WriteString(`],"page":{"no":1,"size":20}}`)
	return []byte(b.String())
}

// refPair is a policy's new matcher and the legacy one it must not
// redact less than.
type refPair struct {
	policy Policy
	m      matcher
	legacy legacyMatcher
}

// refMatchers are the matchers the differential tests run under.
func refMatchers() []refPair {
	var r Redactor
	ps := []refPair{{PolicyDefault, NewRegistry("order_no_x", "x-trace", "密").matcher(PolicyDefault),
		legacyMatcher{base: newLegacyRegistry("order_no_x", "x-trace", "密")}}}
	for p := PolicyDefault; p <= PolicyConfig; p++ {
		ps = append(ps, refPair{p, r.matcher(p), legacyMatcher{base: legacyDefault, extra: legacyPolicyExtras[p]}})
	}
	return ps
}

// checkAgainstRef fails unless redactJSON accepts what refRedactJSON
// accepts and redacts every value it redacts.
func checkAgainstRef(t *testing.T, data []byte) {
	for _, p := range refMatchers() {
		got, err := redactJSON(data, p.m)
		want, wantErr := refRedactJSON(data, p.legacy)
		require.Equal(t, wantErr, err, "input %q", data)
		if err != nil {
			continue
		}
		var in, g, w any
		require.NoError(t, decodeNumbers(data, &in))
		require.NoError(t, decodeNumbers([]byte(got), &g), "output %q", got)
		require.NoError(t, decodeNumbers(want, &w))
		requireNoLess(t, p, "", in, g, w, data)
	}
}

func decodeNumbers(data []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// requireNoLess walks the input and both outputs together: wherever the
// legacy output holds Redacted, the new one must too, unless
// legacyExempt excuses it.
func requireNoLess(t *testing.T, p refPair, key string, in, got, want any, data []byte) {
	if want == Redacted {
		if s, ok := got.(string); ok && strings.HasPrefix(s, "[REDACTED") {
			return
		}
		require.True(t, legacyExempt(p, key, in), "policy %s key %q: legacy redacted %v, new kept %v; input %q", p.policy, key, in, got, data)
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "policy %s key %q: shape changed; input %q", p.policy, key, data)
		src := in.(map[string]any)
		for k, wv := range w {
			requireNoLess(t, p, k, src[k], g[k], wv, data)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return // the new matcher redacted the whole array
		}
		src := in.([]any)
		require.Len(t, g, len(w), "input %q", data)
		for i := range w {
			requireNoLess(t, p, key, src[i], g[i], w[i], data)
		}
	}
}

// legacyExempt lists where the new matcher deliberately redacts less: an
// allow-listed name, or a string the legacy matcher took for a bearer or
// basic credential only because it holds the word ("Bearer 令牌").
func legacyExempt(p refPair, key string, in any) bool {
	if _, allowed := p.m.lookup([]byte(key)); allowed && !legacySensitiveOnlyByValue(p, key, in) {
		return true
	}
	s, ok := in.(string)
	if !ok {
		return false
	}
	noAuth := p.legacy
	return legacyHasAuthScheme(s) && !authCredential(s) && !noAuth.secretValueNoAuth(s)
}

// legacySensitiveOnlyByValue reports a value the legacy matcher redacted
// for its shape: an allow-listed key does not excuse that.
func legacySensitiveOnlyByValue(p refPair, key string, in any) bool {
	s, ok := in.(string)
	return ok && !refSensitive(p.legacy, []byte(key)) && p.legacy.secretValue(s)
}

// secretValueNoAuth is the legacy secretValue without its bearer and basic test.
func (m legacyMatcher) secretValueNoAuth(s string) bool {
	switch {
	case len(s) < 8:
		return false
	case legacyContainsJWT(s), legacyIsBlob(s):
		return true
	}
	return m.privateURL(s)
}

func TestRedactJSONMatchesReference(t *testing.T) {
	t.Parallel()
	for _, data := range refInputs(t) {
		checkAgainstRef(t, data)
	}
}

func TestRedactJSONValidity(t *testing.T) {
	t.Parallel()
	for _, data := range refInputs(t) {
		_, err := redactJSON(data, refMatchers()[1].m)
		require.Equal(t, json.Valid(data), err == nil, "input %q", data)
	}
}

// FuzzRedactJSONReference checks, against the implementation redactJSON
// replaced, the same accepted documents and never a value less redacted.
func FuzzRedactJSONReference(f *testing.F) {
	for _, data := range refInputs(f) {
		f.Add(data)
	}
	f.Fuzz(checkAgainstRef)
}

// FuzzRedactJSONValidity checks that redactJSON accepts exactly what
// json.Valid accepts.
func FuzzRedactJSONValidity(f *testing.F) {
	for _, data := range refInputs(f) {
		f.Add(data)
	}
	m := refMatchers()[1].m
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := redactJSON(data, m)
		require.Equal(t, json.Valid(data), err == nil, "input %q", data)
	})
}

// FuzzMatchReference checks key by key that every name the legacy
// registry calls sensitive still is, unless it is allow-listed.
func FuzzMatchReference(f *testing.F) {
	for _, s := range append(legacyKeys, "newPassword", "x-amz-signature", "privatekeyx", "apikex", "密", "密钥", "口令", "tokenpassword", "pas", "K\u212aey", "token_type", "X-Sign") {
		f.Add(s)
	}
	m := Default().matcher(PolicyDefault)
	legacy := legacyMatcher{base: legacyDefault}
	f.Fuzz(func(t *testing.T, s string) {
		if !legacy.sensitive([]byte(s)) {
			return
		}
		sensitive, allowed := m.lookup([]byte(s))
		require.True(t, sensitive || allowed, "key %q", s)
	})
}

// validityTemplates have one or two '%' slots that TestRedactJSONValidityBytes
// fills with every byte, so each branch of the grammar meets every byte.
var validityTemplates = []string{
	`%`, `%%`, ` % `, `[%]`, `[%%]`, `[1%2]`, `{"a":%}`, `{%"a":1}`, `{"a"%1}`, `{"a":1%}`, `{"a":1%"b":2}`,
	`"%"`, `"\%"`, `"\%%"`, `"\u%000"`, `"\u0%00"`, `"\u00%%"`, `"\u000%"`, `"%%"`,
	`%1`, `-%`, `0%`, `1%`, `0%%`, `-0%`, `1.%`, `1.5%`, `1e%`, `1e%%`, `1E+%`, `%{}`, `{}%`, `[]%%`,
	`t%ue`, `tr%e`, `%rue`, `true%`, `f%lse`, `fals%`, `n%ll`, `nul%`, `null%`,
	`{"password":%}`, `{"password":[%]}`, `{"password":"\%"}`, `{"password":1%}`,
}

func TestRedactJSONValidityBytes(t *testing.T) {
	t.Parallel()
	m := refMatchers()[1].m
	var data []byte
	for _, tmpl := range validityTemplates {
		slots := strings.Count(tmpl, "%")
		for v := range 1 << (8 * slots) {
			data = data[:0]
			shift := 8 * (slots - 1)
			for i := 0; i < len(tmpl); i++ {
				if tmpl[i] != '%' {
					data = append(data, tmpl[i])
					continue
				}
				data = append(data, byte(v>>shift))
				shift -= 8
			}
			_, err := redactJSON(data, m)
			require.Equal(t, json.Valid(data), err == nil, "input %q", data)
		}
	}
}

// scanner steps through a document that json.Valid has accepted, so it
// needs no error handling of its own. Only the reference walker uses it.
type scanner struct {
	in  []byte
	pos int
}

func (s *scanner) ws() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// str consumes a string literal at pos and returns it with its quotes.
func (s *scanner) str() []byte {
	start := s.pos
	s.pos++
	for {
		switch s.in[s.pos] {
		case '\\':
			s.pos += 2
		case '"':
			s.pos++
			return s.in[start:s.pos]
		default:
			s.pos++
		}
	}
}

// literal consumes a number, true, false or null and returns its text.
func (s *scanner) literal() []byte {
	start := s.pos
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.in[start:s.pos]
		}
		s.pos++
	}
	return s.in[start:s.pos]
}

// skip consumes one value of any type.
func (s *scanner) skip() {
	s.ws()
	switch s.in[s.pos] {
	case '"':
		s.str()
	case '{', '[':
		for depth := 0; ; {
			switch s.in[s.pos] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.pos++
			if depth == 0 {
				return
			}
		}
	default:
		s.literal()
	}
}
