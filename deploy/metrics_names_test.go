package deploy

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/memory"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/core/ports"
)

// recorder is a Registerer that remembers every metric name registered
// through it, including vectors that have no series yet (which Gather
// would not show).
type recorder struct {
	prometheus.Registerer
	names map[string]prometheus.ValueType // 0 when unknown
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = 0
		}
	}
	return r.Registerer.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// exportedMetrics builds every metric the api and the relay register, with
// the same constructors their fx Modules call (apps/*/app.go compose
// metrics.Module, RelayModule, ProbeModule, postgres.MetricsModule (pool
// stats, and the relay's Listener gauge),
// queue.MetricsModule and apiserver.Module; the relay's durability check
// registers queue.NewDurabilityMetrics), and returns their names.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := metrics.NewRegistry() // Go and process collectors
	rec := &recorder{Registerer: reg, names: map[string]prometheus.ValueType{}}
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		rec.names[f.GetName()] = 0
	}
	// relay
	metrics.NewRelayMetrics(rec)
	_, err = metrics.NewConsumerFailures(rec)
	require.NoError(t, err)
	_, err = metrics.NewRetentionRemoved(rec)
	require.NoError(t, err)
	_, err = metrics.NewReconcileMetrics(rec)
	require.NoError(t, err)
	_, err = metrics.NewSweepMetrics(rec) // the sweeps' and the periodic commands' counters
	require.NoError(t, err)
	require.NoError(t, metrics.RegisterOutboxStats(rec, memory.NewOutboxStore(), ports.SystemClock, slog.Default()))
	probes := []ports.Probe{{Name: "postgres", Check: func(context.Context) error { return nil }}}
	require.NoError(t, metrics.RegisterProbes(rec, "relay", probes, ports.SystemClock))
	sqldb, err := sql.Open("pgx", "postgres://127.0.0.1:1/none") // never connects: only pool stats are read
	require.NoError(t, err)
	t.Cleanup(func() { _ = sqldb.Close() })
	db := bun.NewDB(sqldb, pgdialect.New())
	require.NoError(t, postgres.RegisterPoolStats(rec, db, db))
	require.NoError(t, postgres.RegisterListenerMetrics(rec, postgres.NewListener("", postgres.OutboxChannel, func() {}, nil)))
	ins := asynq.NewInspector(asynq.RedisClientOpt{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = ins.Close() })
	require.NoError(t, rec.Register(queue.NewQueueStats(ins, []string{"default"})))
	_, err = queue.NewDurabilityMetrics(rec)
	require.NoError(t, err)
	// api (its own registry in production; one here, names do not collide)
	_, err = metrics.NewConfigAlerts(rec)
	require.NoError(t, err)
	_, err = apiserver.New(apiserver.Params{
		Logger: slog.Default(), JWTSecret: []byte("metrics-names-test-secret-0123456789"),
		Metrics: struct {
			prometheus.Registerer
			prometheus.Gatherer
		}{rec, reg},
	})
	require.NoError(t, err)

	out := map[string]bool{}
	for n := range rec.names {
		out[n] = true
	}
	return out
}

// promqlNames returns the metric names an expression selects.
func promqlNames(expr string) []string {
	s := regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(expr, `""`) // strings
	s = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(s, " ")              // label matchers
	s = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(s, " ")             // ranges, subqueries
	s = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\boffset\s+\S+`).ReplaceAllString(s, " ")
	keywords := map[string]bool{"and": true, "or": true, "unless": true, "bool": true}
	var names []string
	for _, m := range regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`).FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || keywords[m] { // functions and aggregations
			continue
		}
		names = append(names, m)
	}
	return names
}

// baseName maps a histogram's series name to the registered name.
func baseName(name string, exported map[string]bool) string {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok && exported[b] {
			return b
		}
	}
	return name
}

func checkNames(t *testing.T, where string, exprs []string, external map[string]string) {
	t.Helper()
	exported := exportedMetrics(t)
	for n := range external {
		require.False(t, exported[n], "%s is exported by the template itself; drop it from the external list", n)
		exported[n] = true
	}
	require.NotEmpty(t, exprs, "%s: no PromQL expressions found", where)
	var missing []string
	for _, e := range exprs {
		names := promqlNames(e)
		require.NotEmpty(t, names, "%s: no metric in %q", where, e)
		for _, n := range names {
			if !exported[baseName(n, exported)] {
				missing = append(missing, n+" (in "+e+")")
			}
		}
	}
	sort.Strings(missing)
	known := make([]string, 0, len(exported))
	for n := range exported {
		known = append(known, n)
	}
	slices.Sort(known)
	require.Empty(t, missing, "%s references metrics no binary exports; exported: %v", where, known)
}

// externalMetrics are series an alert rule reads from another exporter,
// by the exporter that exports them: the WAL-archiving rules
// (prometheus/wal-archiving.yml, docs/dr.md) read postgres_exporter's
// default pg_stat_archiver collector on the primary, since archiving is
// the database server's work, not the api's or the relay's.
var externalMetrics = map[string]string{
	"pg_stat_archiver_archived_count":   "postgres_exporter",
	"pg_stat_archiver_failed_count":     "postgres_exporter",
	"pg_stat_archiver_last_archive_age": "postgres_exporter",
}

// Every alert rule selects metrics the api or the relay really registers,
// or that externalMetrics names.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	var exprs []string
	files, err := filepath.Glob("prometheus/*.yml")
	require.NoError(t, err)
	for _, f := range files {
		for _, d := range loadYAML(t, f) {
			for _, g := range list(d["groups"]) {
				for _, r := range list(g["rules"]) {
					exprs = append(exprs, str(r["expr"]))
				}
			}
		}
	}
	checkNames(t, "deploy/prometheus", exprs, externalMetrics)
}

// Every Grafana panel query selects metrics the api or the relay really
// registers.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("grafana/july-service.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	var exprs []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, strings.ReplaceAll(tg.Expr, "$__rate_interval", "5m"))
		}
	}
	checkNames(t, "deploy/grafana/july-service.json", exprs, nil)
}

func TestPromQLNames(t *testing.T) {
	t.Parallel()
	got := promqlNames(`sum by (error_code) (increase(a_total{outcome="final"}[15m])) > 0 or sum by (code) (b unless b offset 15m) > 0 and on() histogram_quantile(0.9, rate(c_bucket[5m]))`)
	require.Equal(t, []string{"a_total", "b", "b", "c_bucket"}, got)
}
