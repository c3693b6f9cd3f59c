package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/internal/appkit"
)

// testSecret signs the tests' tokens; the app under test verifies with it.
var testSecret = []byte("test-secret-of-at-least-32-bytes-for-hs256")

// Test keys, one per type and rule, registered the way a domain module does.
const (
	keyText   = "test.conf.text"
	keyCount  = "test.conf.count"
	keyFlag   = "test.conf.flag"
	keyDoc    = "test.conf.doc"
	keyMode   = "test.conf.mode"
	keySecret = "test.conf.secret"
	keyFixed  = "test.conf.fixed"
	keyTier   = "test.conf.tier" // sensitive, with enum values that must never show
)

func i64(n int64) *int64 { return &n }

// testKeys registers the test module's keys, as a domain's ConfigSpecs do.
var testKeys = fx.Invoke(func(reg *sysconfig.Registry) error {
	return reg.Register(
		sysconfig.Spec{Key: keyText, Module: "test", Type: sysconfig.TypeString, Default: "hello", MaxLen: 20, Description: "测试文本"},
		sysconfig.Spec{Key: keyCount, Module: "test", Type: sysconfig.TypeInt, Default: "1", Min: i64(1), Max: i64(10), Description: "测试计数"},
		sysconfig.Spec{Key: keyFlag, Module: "test", Type: sysconfig.TypeBool, Default: "false", Description: "测试开关"},
		sysconfig.Spec{Key: keyDoc, Module: "test", Type: sysconfig.TypeJSON, Default: `{"a":1}`, Description: "测试文档"},
		sysconfig.Spec{Key: keyMode, Module: "test", Type: sysconfig.TypeString, Default: "a", Enum: []string{"a", "b"}, UIHint: sysconfig.UISelect, Description: "测试模式"},
		sysconfig.Spec{Key: keySecret, Module: "test", Type: sysconfig.TypeString, Default: "none", MaxLen: 32, Sensitive: true, Description: "测试密钥"},
		sysconfig.Spec{Key: keyFixed, Module: "test", Type: sysconfig.TypeString, Default: "fixed", ReadOnly: true, Description: "测试只读"},
		sysconfig.Spec{Key: keyTier, Module: "test", Type: sysconfig.TypeString, Default: "tier-alpha-9f3", Enum: []string{"tier-alpha-9f3", "tier-omega-7c1"}, Sensitive: true, Description: "测试敏感枚举"},
	)
})

// apiApp is one running API on a private database and Redis prefix.
type apiApp struct {
	url string
	// adminURL is the admin listener (ADMIN_ADDR): /metrics and the probes.
	adminURL string
	db       *testinfra.DB
	svc      *configsvc.Service
	metrics  *prometheus.Registry
	echo     *echo.Echo
	guard    ports.Guard
	srv      *httpx.HTTPServer
	tracing  *tracing.Provider
	logs     *testinfra.LogBuffer
	// pg and rd sit between the app and Postgres / Redis when
	// appOpts.proxied is set: Down makes the dependency refuse connections.
	pg, rd *testinfra.Proxy
	// stop stops the app (once; the test's cleanup calls it too).
	stop func() error
}

type appOpts struct {
	// redisURL overrides the test Redis (e.g. a closed port).
	redisURL string
	// seed runs on the migrated database before the app starts.
	seed func(t *testing.T, db *testinfra.DB)
	// proxied puts a testinfra.Proxy in front of Postgres and Redis.
	proxied bool
	// tune changes the config before the app is built.
	tune func(*config)
	// db, when set, is the (migrated) database the API uses instead of a
	// new private one, e.g. an internal/pgtopo pair.
	db *testinfra.DB
}

// startAPI builds the app from the same options() main uses, with the
// test's database, Redis prefix, a free port and the test keys.
func startAPI(t *testing.T, o appOpts) *apiApp {
	t.Helper()
	db := o.db
	if db == nil {
		db = testinfra.NewDB(t, testinfra.DBOpts{Migrate: migrateDomains})
	}
	cfg := config{
		DatabaseURL:      db.URL,
		LogLevel:         slog.LevelInfo,
		HTTPAddr:         "127.0.0.1:0",
		AdminAddr:        "127.0.0.1:0",
		JWTSecret:        testSecret,
		AccessLogHashKey: deriveHashKey(testSecret),
		ShutdownTimeout:  5 * time.Second,
		JWTMaxLifetime:   24 * time.Hour,
		// Hermetic: the test process's own OTEL_* variables do not apply.
		Tracing: tracing.Config{Service: tracing.Service{Name: "api"}, Getenv: func(string) string { return "" }},
	}
	if o.redisURL != "" {
		cfg.RedisURL, cfg.CachePrefix, cfg.CounterPrefix = o.redisURL, "t:down:", "t:down:count:"
	} else {
		r := testinfra.NewRedis(t)
		cfg.RedisURL, cfg.CachePrefix, cfg.CounterPrefix = r.URL, r.Prefix, r.Prefix+"count:"
	}
	if o.seed != nil {
		o.seed(t, db)
	}
	a := &apiApp{db: db, logs: &testinfra.LogBuffer{}}
	if o.proxied {
		cfg.DatabaseURL, a.pg = testinfra.ProxyURL(t, cfg.DatabaseURL)
		cfg.RedisURL, a.rd = testinfra.ProxyURL(t, cfg.RedisURL)
	}
	if o.tune != nil {
		o.tune(&cfg)
	}
	var adm adminServer
	app := fx.New(options(cfg, appkit.NewLogger(a.logs, cfg.LogLevel, httpx.LogIDs)), testKeys,
		fx.Populate(&a.svc, &a.metrics, &a.echo, &a.guard, &a.srv, &a.tracing, &adm))
	require.NoError(t, app.Err())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, app.Start(ctx))
	a.stop = sync.OnceValue(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return app.Stop(ctx)
	})
	t.Cleanup(func() { require.NoError(t, a.stop()) })
	a.url = "http://" + a.srv.Addr().String()
	a.adminURL = "http://" + adm.Addr().String()
	return a
}

// migrateDomains applies the foundation's migrations and those of every
// domain the apps run (domains.All, the test-only domain included).
func migrateDomains(ctx context.Context, db *bun.DB) error {
	var sets []fs.FS
	for _, s := range domains.MigrationSets() {
		sets = append(sets, s.FS)
	}
	return postgres.MigrateWith(sets...)(ctx, db)
}

func token(t *testing.T, sub string, roles ...string) string {
	t.Helper()
	return apitest.Token(t, testSecret, sub, roles...)
}

func admin(t *testing.T) string { return token(t, "admin-1", auth.RoleSuperAdmin) }

// requireNothingInternal fails when an error body quotes the cause.
func requireNothingInternal(t *testing.T, body string) {
	t.Helper()
	for _, s := range []string{"127.0.0.1", "dial", "connect", "pgx", "postgres", "redis", "refused", "EOF", "tcp"} {
		require.NotContains(t, strings.ToLower(body), strings.ToLower(s), "an outage answer says nothing internal")
	}
}

// response is an answer and the documented path it was validated against.
type response struct {
	apitest.Response
	route string
}

// do sends r and validates the response against docs/openapi.yaml
// (status, headers, body; checkContract), so every test is also a
// contract test.
func (a *apiApp) do(t *testing.T, r apitest.Request) response {
	t.Helper()
	res := apitest.Do(t, a.url, r)
	return response{Response: res, route: checkContract(t, res)}
}

// send is do without assertions, for goroutines other than the test's.
func (a *apiApp) send(r apitest.Request) (apitest.Response, error) {
	return apitest.Send(context.Background(), a.url, r)
}

func decodeView(t *testing.T, r response) sysconfig.View {
	t.Helper()
	var v sysconfig.View
	require.NoError(t, json.Unmarshal([]byte(r.Body), &v), "body %s", r.Body)
	return v
}

// audits returns the audit records of key, oldest first, from the
// audit.recorded outbox events.
func (a *apiApp) audits(t *testing.T, key string) []outbox.AuditPayload {
	t.Helper()
	var payloads []string
	err := a.db.Bun.NewRaw(`SELECT payload::text FROM tb_outbox_event
		WHERE event_type = ? AND resource_id = ? ORDER BY id`, outbox.AuditEventType, key).
		Scan(t.Context(), &payloads)
	require.NoError(t, err)
	out := make([]outbox.AuditPayload, len(payloads))
	for i, p := range payloads {
		require.NoError(t, json.Unmarshal([]byte(p), &out[i]), "payload %s", p)
	}
	return out
}

// row is one tb_system_config row as the tests inspect it.
type row struct {
	Value     string `bun:"config_value"`
	Type      string `bun:"value_type"`
	Version   int64  `bun:"version"`
	UpdatedBy string `bun:"updated_by"`
}

func (a *apiApp) row(t *testing.T, key string) (row, bool) {
	t.Helper()
	var rows []row
	err := a.db.Bun.NewRaw(`SELECT config_value, value_type, version, updated_by FROM tb_system_config WHERE config_key = ?`, key).
		Scan(t.Context(), &rows)
	require.NoError(t, err)
	if len(rows) == 0 {
		return row{}, false
	}
	return rows[0], true
}

// counter returns the value of a counter with the given label, 0 if absent.
func (a *apiApp) counter(t *testing.T, name, label, value string) float64 {
	t.Helper()
	return a.sample(t, name, label, value, 0)
}

// sample returns the value of the counter or gauge name with the given
// label, or missing when there is none.
func (a *apiApp) sample(t *testing.T, name, label, value string, missing float64) float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if m.GetGauge() != nil {
						return m.GetGauge().GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return missing
}
