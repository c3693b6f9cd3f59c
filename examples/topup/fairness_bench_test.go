package topup_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/core/ports"
	"github.com/july/template/examples/topup"
)

// BenchmarkCreateFairness measures what one flooding agent does to
// another: agent "victim" creates b.N top-ups one after the other and
// waits for each credit, while (except in "alone") agent "flood" sends
// creates from 8 goroutines without pause. It reports the victim's p50
// create latency and p50 credit delay (201 until its wallet shows the
// amount: relay, queue and crediter; a credit not seen within a minute
// counts as a minute and ends the run, credits-over-1m). "flood-unlimited" sets
// topup.create.per_minute to 100000, "flood-limited" keeps the default.
// Run: go test -run '^$' -bench CreateFairness -benchtime 30x ./examples/topup/
func BenchmarkCreateFairness(b *testing.B) {
	for _, mode := range []struct {
		name  string
		limit int
		flood bool
	}{
		{"alone", topup.DefaultCreatesPerMinute, false},
		{"flood-unlimited", 100_000, true},
		{"flood-limited", topup.DefaultCreatesPerMinute, true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			e := rateEnvOn(b, mode.limit, nil, ports.SystemClock)
			e.startRelay(b)
			ctx, stop := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			var floods, refused atomic.Int64
			token := apitest.Token(b, testSecret, "flood", topup.RoleAgent)
			if mode.flood {
				for g := range 8 {
					wg.Go(func() {
						for i := 0; ctx.Err() == nil; i++ {
							r, err := apitest.Send(ctx, e.srv.URL, apitest.Request{Method: http.MethodPost, Path: "/api/v1/topups",
								Body: `{"amount_cents":100,"channel":"wechat"}`, Token: token,
								Header: map[string]string{"X-Request-ID": fmt.Sprintf("flood-%d-%08d", g, i)}})
							if err == nil {
								floods.Add(1)
								if r.Status == http.StatusTooManyRequests {
									refused.Add(1)
								}
							}
						}
					})
				}
				time.Sleep(2 * time.Second) // let the flood build a backlog
			}
			creates, credits := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			var balance, late int64
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				r := e.create(b, "victim", fmt.Sprintf("victim-%08d", i), `{"amount_cents":100,"channel":"wechat"}`)
				created := time.Now()
				if r.Status != http.StatusCreated {
					b.Fatalf("victim create %d: %d %s", i, r.Status, r.Body)
				}
				balance += 100
				for e.balance(b, "victim") < balance {
					if time.Since(created) > time.Minute {
						late++ // counted as a minute; the run stops here
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				creates, credits = append(creates, created.Sub(start)), append(credits, time.Since(created))
				if late > 0 {
					break
				}
			}
			b.StopTimer()
			stop()
			wg.Wait()
			b.ReportMetric(p50(creates).Seconds()*1000, "create-p50-ms")
			b.ReportMetric(p50(credits).Seconds()*1000, "credit-p50-ms")
			b.ReportMetric(float64(floods.Load()), "flood-requests")
			b.ReportMetric(float64(refused.Load()), "flood-429")
			b.ReportMetric(float64(late), "credits-over-1m")
		})
	}
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// balance is agent's wallet balance, 0 before its first credit.
func (e *env) balance(b testing.TB, agent string) int64 {
	var n int64
	_ = e.db.NewSelect().Table("ex_topup_wallet").Column("balance_cents").Where("agent_id = ?", agent).Scan(b.Context(), &n)
	return n
}
