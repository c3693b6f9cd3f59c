package main_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
)

// sample returns the value of the sample whose line starts with series
// (name plus its rendered labels), and whether there is one.
func (p *relayProc) sample(series string) (float64, bool) {
	p.t.Helper()
	code, body := p.get("/metrics")
	require.Equal(p.t, http.StatusOK, code, "relay %s /metrics", p.name)
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(p.t, err, "parse %s sample %q", series, v)
			return f, true
		}
	}
	return 0, false
}

// The done-when, on a real relay: with Redis stopped, events
// committed two hours ago make outbox_oldest_pending_age_seconds read about
// 2h while every row backs off (it read 0 before: it came from
// next_attempt_at), dependency_up shows Redis down, and the relay logs one
// WARN for the outage; after recovery the backlog drains, the gauge falls
// to zero and one WARN says the queue is back.
// deploy/prometheus/tests/outbox_queue_unavailable.yml is the rule test
// of the alert these gauges drive.
func TestE2EOutageIsVisible(t *testing.T) {
	t.Parallel()
	rp := testinfra.StartRedisProc(t)
	w := newWorld(t, rp.URL)
	w.startConsumer()
	r := w.startRelay("relay-monitor")
	const redisUp = `dependency_up{component="relay",dependency="redis"}`
	eventually(t, "redis reported up", func() (bool, string) {
		v, ok := r.sample(redisUp)
		return ok && v == 1, fmt.Sprintf("%s=%v (present %v)", redisUp, v, ok)
	})

	rp.Stop(t)
	const n = 20
	created := time.Now().Add(-2 * time.Hour)
	evs := make([]outbox.Event, n)
	for i := range evs {
		ev, err := outbox.New(outbox.NewParams{
			EventID: uuid.NewString(), EventType: orderCreatedType, PayloadVersion: 1,
			AggregateType: "order", AggregateID: fmt.Sprint("old-", i), ResourceType: "order", ResourceID: fmt.Sprint("old-", i),
			RequestID: "req-old", CorrelationID: "corr-old", Payload: orderCreated{OrderID: fmt.Sprint("old-", i), Amount: i}, Now: created,
		})
		require.NoError(t, err)
		evs[i] = ev
	}
	require.NoError(t, pgoutbox.Append(t.Context(), w.db.Bun, evs...))

	// Every row backs off into the future; the age still reads ~2h.
	w.waitCount(n, `SELECT count(*) FROM tb_outbox_event WHERE status = 1 AND retry_count >= 1
		AND last_error_code = 'QUEUE_UNAVAILABLE' AND next_attempt_at > now()`)
	eventually(t, "oldest-pending age rises to ~2h while Redis is down", func() (bool, string) {
		age, _ := r.sample("outbox_oldest_pending_age_seconds")
		return age >= 7200 && age < 7300, fmt.Sprintf("outbox_oldest_pending_age_seconds=%v", age)
	})
	due, ok := r.sample("outbox_oldest_due_age_seconds")
	require.True(t, ok)
	require.Less(t, due, 60.0, "the due age is relay lag: rows backing off are not due")
	eventually(t, "redis reported down", func() (bool, string) {
		v, ok := r.sample(redisUp)
		return ok && v == 0, fmt.Sprintf("%s=%v", redisUp, v)
	})
	require.Equal(t, 1, strings.Count(r.logs.String(), "task queue unavailable"), "one WARN for the outage:\n%s", r.logs.String())

	rp.Start(t)
	w.waitCount(n, consumedAll)
	w.waitCount(n, deliveredEvents)
	eventually(t, "oldest-pending age falls to zero after recovery", func() (bool, string) {
		age, _ := r.sample("outbox_oldest_pending_age_seconds")
		return age == 0, fmt.Sprintf("outbox_oldest_pending_age_seconds=%v", age)
	})
	eventually(t, "redis reported up again", func() (bool, string) {
		v, _ := r.sample(redisUp)
		return v == 1, fmt.Sprintf("%s=%v", redisUp, v)
	})
	logs := r.logs.String()
	require.Equal(t, 1, strings.Count(logs, "task queue unavailable"), "still one start line")
	require.Equal(t, 1, strings.Count(logs, "task queue reachable again"), "one WARN when the queue is back:\n%s", logs)
	lag, ok := r.sample("outbox_delivery_lag_seconds_count")
	require.True(t, ok)
	require.EqualValues(t, n, lag, "one delivery-lag observation per delivered event")
	sum, _ := r.sample("outbox_delivery_lag_seconds_sum")
	require.Greater(t, sum, float64(n)*7200, "lag is measured from the commit two hours ago")
	for _, s := range []string{`asynq_queue_stats_up{queue="` + w.queue + `"}`, `go_sql_open_connections{db_name="relay_outbox"}`} {
		_, ok := r.sample(s)
		require.True(t, ok, "the relay exports %s", s)
	}
}
