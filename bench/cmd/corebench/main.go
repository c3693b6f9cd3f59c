// Command corebench prints the core rule benchmarks (redaction and
// fingerprinting) as a Markdown table for bench/performance.md.
package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/redaction"
)

func main() {
	body1k := jsonBody(1 << 10)
	body50k := jsonBody(50 << 10)
	r := &redaction.Redactor{}
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "corebench:", err)
		os.Exit(1)
	}
	rows := []struct {
		name string
		size int
		fn   func(b *testing.B)
	}{
		{"redact JSON 1 KB", len(body1k), func(b *testing.B) {
			for b.Loop() {
				_, _ = r.RedactJSON(body1k)
			}
		}},
		{"redact JSON 50 KB", len(body50k), func(b *testing.B) {
			for b.Loop() {
				_, _ = r.RedactJSON(body50k)
			}
		}},
		{"fingerprint 1 KB", len(body1k), func(b *testing.B) {
			for b.Loop() {
				_, _ = fp.FromJSON(body1k)
			}
		}},
	}
	fmt.Println("| benchmark | ns/op | MB/s | allocs/op |")
	fmt.Println("|---|---:|---:|---:|")
	for _, row := range rows {
		res := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(row.size))
			row.fn(b)
		})
		mbs := float64(row.size) * float64(res.N) / res.T.Seconds() / 1e6
		fmt.Printf("| %s | %d | %.1f | %d |\n", row.name, res.NsPerOp(), mbs, res.AllocsPerOp())
	}
}

// jsonBody builds a nested JSON object of about n bytes with a few
// sensitive fields in it, like a realistic API body.
func jsonBody(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"user":{"name":"张三","password":"hunter2","profile":{"city":"上海","tags":["a","b"]}},"items":[`)
	for i := 0; sb.Len() < n-64; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"sku":"SKU-%05d","qty":%d,"price":%d.%02d,"token":"tok-%d"}`, i, i%7+1, i%100, i%100, i)
	}
	sb.WriteString(`],"amount":12.50}`)
	return []byte(sb.String())
}
