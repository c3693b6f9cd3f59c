package idempotency_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
)

// benchBody is a ~1 KB create-command body with nesting, arrays, numbers
// and volatile fields.
func benchBody(tb testing.TB) []byte {
	tb.Helper()

	var items []string
	for i := range 8 {
		items = append(items, fmt.Sprintf(`{"sku":"SKU-%04d","qty":%d,"price":%d.50,"tags":["a","b"],"meta":{"ts":%d}}`, i, i+1, 10+i, 1719830400+i))
	}
	body := fmt.Sprintf(`{"request_id":"01HZX3Q9K7M2N8P4R6T0V5W1YB","timestamp":1719830400,"agent_id":12345,`+
		`"amount":1999.00,"currency":"CNY","channel":"wechat","remark":"七月充值 topup for agent","items":[%s],`+
		`"signature":"3f2a9c1e8b7d4e6fa1b2c3d4e5f60718"}`, strings.Join(items, ","))
	require.InDelta(tb, 1024, len(body), 200, "body is %d bytes", len(body))
	return []byte(body)
}

func BenchmarkFingerprint(b *testing.B) {
	f, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	require.NoError(b, err)
	body := benchBody(b)

	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := f.FromJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}
