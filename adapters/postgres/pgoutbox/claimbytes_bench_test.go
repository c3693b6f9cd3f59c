package pgoutbox_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// BenchmarkClaimAtPayloadCap claims 1,000 pending events whose payloads
// are at outbox.MaxPayloadBytes, in batches of up to 1,000 rows, holding
// each batch as the relay does until it is published, and reports the
// peak Go heap in use while a batch is held ("peak-heap-MiB") and the
// largest batch's payload ("batch-payload-MiB"): "rows-only" is the claim
// bounded by rows alone (a budget of 1,000 payloads), "default" the
// DefaultClaimBytes budget.
// Run: go test -run '^$' -bench ClaimAtPayloadCap -benchtime 3x ./adapters/postgres/pgoutbox/
func BenchmarkClaimAtPayloadCap(b *testing.B) {
	for _, bc := range []struct {
		name  string
		bytes int64
	}{{"rows-only", 1000 * outbox.MaxPayloadBytes}, {"default", pgoutbox.DefaultClaimBytes}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := b.Context()
			db := testinfra.NewDB(b, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
			store, err := pgoutbox.NewStore(db, pgoutbox.Config{ClaimBytes: bc.bytes})
			require.NoError(b, err)
			big := strings.Repeat("x", outbox.MaxPayloadBytes-64)
			for range 1000 {
				ev := newOutboxEvent(b)
				ev.Payload = []byte(`{"blob":"` + big + `"}`)
				require.NoError(b, pgoutbox.Append(ctx, db, ev))
			}
			var peak, batch uint64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				_, err := db.ExecContext(ctx, "UPDATE tb_outbox_event SET status = 1, lease_owner = NULL, lease_expires_at = NULL")
				require.NoError(b, err)
				runtime.GC()
				b.StartTimer()
				for {
					claimed, err := store.Claim(ctx, ports.ClaimParams{Owner: "bench", Limit: 1000, LeaseFor: time.Minute, Now: outboxT0.Add(time.Hour)})
					require.NoError(b, err)
					if len(claimed) == 0 {
						break
					}
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapInuse)
					var n uint64
					for _, ev := range claimed {
						n += uint64(len(ev.Payload))
					}
					batch = max(batch, n)
					runtime.GC() // the batch is published and dropped before the next claim
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(batch)/(1<<20), "batch-payload-MiB")
		})
	}
}
