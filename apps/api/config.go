package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/apps/domain"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/internal/envconf"
)

const envHelp = `  DATABASE_URL         postgres URL (required); may be a pooler in transaction mode (PgBouncer)
  DATABASE_DIRECT_URL  a direct connection to the same database, for what needs a session
                       (default DATABASE_URL); the api needs none, and only checks it
  REDIS_URL            redis://host:port/db, redis-sentinel://s1:26379,s2:26379/0?master=NAME
                       or redis-cluster://n1:7000,n2:7001 for the system-config cache
                       (required; the API keeps serving from Postgres while Redis is down)
  LOG_LEVEL            debug|info|warn|error (default info)
  HTTP_ADDR            listen address of the API, /healthz and /readyz (default :8080)
  ADMIN_ADDR           admin listener: /metrics, /healthz and /readyz, never the API
                       (default POD_IP:9091 when POD_IP is set, else 127.0.0.1:9091:
                       never every interface unless you set ":9091"). Keep it off the
                       Service and the Ingress; Prometheus scrapes it
  ADMIN_PPROF          true serves Go's profiles under /debug/pprof/ on ADMIN_ADDR
                       (default false: a profile costs CPU while it runs)
  POD_IP               this pod's IP (Kubernetes downward API status.podIP, as deploy/k8s
                       sets it): the default ADMIN_ADDR binds it so Prometheus reaches it
  AUTH_JWT_SECRET      HS256 secret for bearer tokens, at least 32 bytes (required;
                       never printed). Tokens carry "sub" and "roles"; role
                       super_admin may manage system config
  AUTH_JWT_ISSUER      when set, a token's "iss" must equal it (default: not checked)
  AUTH_JWT_AUDIENCE    when set, a token's "aud" must contain it (default: not checked)
  AUTH_JWT_MAX_LIFETIME longest accepted token lifetime, exp minus iat (default 24h,
                       1m..720h). Always refused: an iat in the future beyond 30s of
                       clock skew, and any "crit" header
  ACCESS_LOG_HASH_KEY  key of the access log's body hashes, at least 32 bytes
                       (default: derived from AUTH_JWT_SECRET, so it is never public)
  HTTP_BODY_BUDGET     request-body bytes all in-flight requests may hold together;
                       past it a request answers 503 SERVER_BUSY with Retry-After
                       (default 67108864 = 64 MiB, 1048576..4294967296). A body
                       reserves its Content-Length (its route's limit when larger or
                       undeclared) from its first read until the request ends
  HTTP_BODY_SHARE      part of HTTP_BODY_BUDGET one principal's bodies may hold
                       together (unauthenticated callers share one); past it 429
                       BODY_SHARE_EXCEEDED with Retry-After. A principal holding
                       nothing may always send one body (default 8388608 = 8 MiB,
                       65536..HTTP_BODY_BUDGET)
  HTTP_BODY_MIN_RATE   slowest average a request body may arrive at, bytes/s, once
                       HTTP_BODY_RATE_GRACE has passed; a slower (stalled, trickling)
                       body is cut off with 408 BODY_TOO_SLOW and its reservation
                       released (default 16384, 0 = no minimum, 0..1073741824)
  HTTP_BODY_RATE_GRACE how long a body may send nothing before HTTP_BODY_MIN_RATE
                       applies (default 5s, 100ms..1m)
  IDEMPOTENCY_KEY_ONLY true: only the Idempotency-Key header is an idempotency key;
                       false: X-Request-ID stands in when it is missing (default
                       false). Set true behind a proxy that generates X-Request-ID
                       for requests without one (ingress-nginx generate-request-id,
                       Envoy): a retry would otherwise carry a new key and run twice
  SHUTDOWN_TIMEOUT     grace period for in-flight requests on SIGTERM, after the
                       drain delay (default 15s)
  SHUTDOWN_DRAIN_DELAY on SIGTERM /readyz answers 503 for this long while requests
                       are still served, so endpoints drop the pod before the
                       listener closes (default 5s, 0s..1m; at least the readiness
                       probe's periodSeconds)
  OTEL_EXPORTER_OTLP_ENDPOINT  OpenTelemetry collector, OTLP over HTTP (e.g.
                       http://localhost:4318); tracing is off unless it (or
                       OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set
  OTEL_SERVICE_NAME    service.name of the spans (default api); OTEL_TRACES_SAMPLER,
                       OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED and the other
                       standard OTEL_* variables apply too
`

// secret is a byte string that never prints: fmt, %#v and slog all show a
// placeholder, so a config dumped into a log cannot leak it.
type secret []byte

func (secret) String() string               { return "[REDACTED]" }
func (secret) GoString() string             { return "[REDACTED]" }
func (secret) LogValue() slog.Value         { return slog.StringValue("[REDACTED]") }
func (s secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

type config struct {
	DatabaseURL      string
	DirectURL        string
	RedisURL         string
	LogLevel         slog.Level
	HTTPAddr         string
	AdminAddr        string
	AdminPprof       bool
	JWTSecret        secret
	JWTIssuer        string
	JWTAudience      string
	JWTMaxLifetime   time.Duration
	AccessLogHashKey secret
	ShutdownTimeout  time.Duration
	DrainDelay       time.Duration
	BodyBudget       int64
	BodyShare        int64
	BodyMinRate      int64 // -1: no minimum
	BodyRateGrace    time.Duration
	IdemKeyOnly      bool
	// CachePrefix starts every Redis key of the config cache. It is not read
	// from the environment; tests set it to their private prefix.
	CachePrefix string
	// ConfigRefresh overrides the package's ConfigRefresh; tests only.
	ConfigRefresh time.Duration
	// CounterPrefix starts the Redis keys of the rejected-update limit;
	// like CachePrefix it is for tests only.
	CounterPrefix string
	// DBMaxOpenConns caps the Postgres pool (0: postgres.DefaultMaxOpenConns).
	// Not read from the environment; tests shrink the pool with it.
	DBMaxOpenConns int
	// Tracing reads the OTEL_* variables; tests set its Exporter.
	Tracing tracing.Config
	// DomainEnv are the domains' own variables (domain.Domain.APIEnv).
	DomainEnv domain.Settings
}

const (
	envJWTSecret = "AUTH_JWT_SECRET"
	envHashKey   = "ACCESS_LOG_HASH_KEY"
)

func loadConfig(getenv func(string) string) (config, error) {
	return loadConfigOf(domains.All(), getenv)
}

// loadConfigOf is loadConfig for the domains ds, whose own variables it
// reads with the API's.
func loadConfigOf(ds []domain.Domain, getenv func(string) string) (config, error) {
	r := envconf.New(getenv)
	c := config{
		DatabaseURL:     r.PostgresURL("DATABASE_URL"),
		DirectURL:       r.OptionalPostgresURL("DATABASE_DIRECT_URL", ""),
		RedisURL:        r.RedisURL("REDIS_URL"),
		LogLevel:        r.LogLevel("LOG_LEVEL"),
		HTTPAddr:        r.Addr("HTTP_ADDR", ":8080"),
		AdminAddr:       r.AdminAddr(9091),
		AdminPprof:      r.Bool("ADMIN_PPROF", false),
		ShutdownTimeout: r.Duration("SHUTDOWN_TIMEOUT", 15*time.Second, time.Second, 5*time.Minute),
		JWTIssuer:       r.String("AUTH_JWT_ISSUER", ""),
		JWTAudience:     r.String("AUTH_JWT_AUDIENCE", ""),
		JWTMaxLifetime:  r.Duration("AUTH_JWT_MAX_LIFETIME", 24*time.Hour, time.Minute, 720*time.Hour),
		BodyBudget:      int64(r.Int("HTTP_BODY_BUDGET", int(httpx.DefaultBodyBudget), 1<<20, 1<<32)),
		DrainDelay:      r.Duration("SHUTDOWN_DRAIN_DELAY", httpx.DefaultDrainDelay, 0, time.Minute),
		IdemKeyOnly:     r.Bool("IDEMPOTENCY_KEY_ONLY", false),
		CachePrefix:     redis.DefaultConfigPrefix,
		CounterPrefix:   redis.DefaultCounterPrefix,
		Tracing:         tracing.Config{Service: tracing.Service{Name: "api"}, Getenv: getenv},
	}
	c.DomainEnv = domain.LoadEnv(ds, domain.SideAPI, r)
	c.BodyShare = int64(r.Int("HTTP_BODY_SHARE", int(httpx.DefaultBodyShare), 64<<10, int(max(c.BodyBudget, 64<<10))))
	c.BodyMinRate = int64(r.Int("HTTP_BODY_MIN_RATE", int(httpx.DefaultBodyMinRate), 0, 1<<30))
	if c.BodyMinRate == 0 {
		c.BodyMinRate = -1
	}
	c.BodyRateGrace = r.Duration("HTTP_BODY_RATE_GRACE", httpx.DefaultBodyRateGrace, 100*time.Millisecond, time.Minute)
	jwtSecret, errSecret := readSecret(getenv)
	c.JWTSecret = jwtSecret
	var errHash error
	if k := getenv(envHashKey); k != "" {
		if len(k) < auth.MinSecretLen {
			errHash = fmt.Errorf("%s: is shorter than %d bytes (value hidden); set a longer random value or unset it to derive one from %s", envHashKey, auth.MinSecretLen, envJWTSecret)
		}
		c.AccessLogHashKey = secret(k)
	} else if errSecret == nil {
		c.AccessLogHashKey = deriveHashKey(jwtSecret)
	}
	return c, errors.Join(r.Err(), errSecret, errHash)
}

// readSecret returns AUTH_JWT_SECRET or an error that names the variable
// and the rule, never the value.
func readSecret(getenv func(string) string) (secret, error) {
	s := getenv(envJWTSecret)
	switch {
	case s == "":
		return nil, fmt.Errorf("%s: is required; set it to a random string of at least %d bytes (e.g. openssl rand -base64 48)", envJWTSecret, auth.MinSecretLen)
	case len(s) < auth.MinSecretLen:
		return nil, fmt.Errorf("%s: is shorter than %d bytes (value hidden); set a longer random value", envJWTSecret, auth.MinSecretLen)
	}
	return secret(s), nil
}

// deriveHashKey keys the access log's body hashes from the JWT secret, so
// the default is per deployment and secret (a public default would let
// anyone reverse the hash of a short body), yet distinct from the signing
// key itself.
func deriveHashKey(jwtSecret []byte) secret {
	m := hmac.New(sha256.New, jwtSecret)
	m.Write([]byte("july/api access-log hash key v1"))
	return m.Sum(nil)
}
