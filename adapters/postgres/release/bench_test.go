package release_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// benchOutboxRows is the size of the outbox the release step is timed on.
const benchOutboxRows = 1_000_000

// BenchmarkReleaseStep times `check` and `up` (nothing pending: check,
// lock, verify with smoke test) on an outbox of 1,000,000 rows, 0.1% of
// them pending, and reports how many rule queries read the outbox with a
// sequential scan (it must be 0). Run it with
//
//	go test ./adapters/postgres/release -run '^$' -bench ReleaseStep -benchtime 10x
func BenchmarkReleaseStep(b *testing.B) {
	ctx := context.Background()
	db := testinfra.NewDB(b, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	for _, q := range []string{
		`INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type, aggregate_id, resource_type, resource_id,
			request_id, correlation_id, payload, status, delivered_at, created_at)
		SELECT gen_random_uuid(), 'bench.recorded', 1, 'bench', g::text, 'bench', g::text, 'req-' || g, 'corr-' || g,
			jsonb_build_object('n', g), CASE WHEN g % 1000 = 0 THEN 1 ELSE 3 END, CASE WHEN g % 1000 = 0 THEN NULL ELSE now() END,
			now() - (g || ' seconds')::interval
		FROM generate_series(1, 1000000) g`,
		`VACUUM ANALYZE tb_outbox_event`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatalf("setup: %v", err)
		}
	}
	sets := []release.Set{release.Foundation()}
	b.ReportMetric(float64(benchOutboxRows), "outbox_rows")

	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			r, err := release.Check(ctx, db, sets)
			if err != nil || !r.OK() {
				b.Fatalf("check: %v %+v", err, r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
	})
	b.Run("up", func(b *testing.B) {
		for b.Loop() {
			res, err := release.Up(ctx, db, sets, release.DefaultLockTimeout)
			if err != nil || len(res.Applied) != 0 {
				b.Fatalf("up: %v %+v", err, res)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
	})
	b.Run("rules", func(b *testing.B) {
		var read, worst int64
		for b.Loop() {
			read, worst = outboxRowsRead(b, db, sets[0].Rules)
		}
		b.ReportMetric(float64(read), "outbox_rows_read")
		b.ReportMetric(float64(worst), "max_rule_rows_read")
		if worst >= benchOutboxRows/10 {
			b.Errorf("a rule read %d of %d outbox rows: it scans the table", worst, benchOutboxRows)
		}
	})
}

// outboxRowsRead runs each outbox rule under EXPLAIN ANALYZE and returns
// how many outbox rows (or index entries) all rules read and the most one
// rule read.
func outboxRowsRead(tb testing.TB, db bun.IDB, rules []release.Rule) (total, worst int64) {
	tb.Helper()
	for _, r := range rules {
		if r.Table != "tb_outbox_event" {
			continue
		}
		var plan string
		if err := db.QueryRowContext(context.Background(), `EXPLAIN (ANALYZE, FORMAT JSON) `+r.SQL).Scan(&plan); err != nil {
			tb.Fatalf("explain %s: %v", r.Name, err)
		}
		var doc []struct{ Plan map[string]any }
		if err := json.Unmarshal([]byte(plan), &doc); err != nil {
			tb.Fatalf("explain %s: %v", r.Name, err)
		}
		n := rowsRead(doc[0].Plan)
		total += n
		worst = max(worst, n)
	}
	return total, worst
}

// rowsRead sums, over the plan's scans of tb_outbox_event and its indexes,
// the rows they returned plus the rows their filters removed.
func rowsRead(node map[string]any) int64 {
	var n int64
	if rel, _ := node["Relation Name"].(string); rel == "tb_outbox_event" {
		rows, _ := node["Actual Rows"].(float64)
		removed, _ := node["Rows Removed by Filter"].(float64)
		loops, _ := node["Actual Loops"].(float64)
		n += int64((rows + removed) * loops)
	}
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		if m, ok := c.(map[string]any); ok {
			n += rowsRead(m)
		}
	}
	return n
}
