package redaction_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/july/template/core/redaction"
)

// orderBody builds a realistic nested API body of about size bytes: orders
// with customers, line items, payment details and a few credentials.
func orderBody(size int) []byte {
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

func benchmarkRedactJSON(b *testing.B, size int) {
	data := orderBody(size)
	var r redaction.Redactor
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := r.RedactJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedactJSON1KB(b *testing.B)  { benchmarkRedactJSON(b, 1024) }
func BenchmarkRedactJSON50KB(b *testing.B) { benchmarkRedactJSON(b, 50*1000) }
