package topup_test

import (
	"strings"
	"testing"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/examples/topup"
)

// worstCreateBody is the costliest create body the route lets through to
// the parser: the whole default body limit (1 MiB) is one amount_cents
// literal, a fraction with a million digits.
func worstCreateBody() []byte {
	const head, tail = `{"amount_cents":1.`, `1,"channel":"wechat"}`
	return []byte(head + strings.Repeat("0", int(httpx.DefaultBodyLimit)-len(head)-len(tail)) + tail)
}

// BenchmarkParseCreateWorstBody is the CPU one create body can cost before
// the service refuses it (docs/security.md, "bounded parsing").
func BenchmarkParseCreateWorstBody(b *testing.B) {
	body := worstCreateBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := topup.ParseCreate(body); err == nil {
			b.Fatal("a fraction was accepted")
		}
	}
}
