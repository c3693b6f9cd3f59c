// Package envconf reads the apps' environment variables with one error per
// bad variable that names it and the expected form, and never echoes a
// secret's value.
package envconf

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/july/template/core/redisurl"
)

// Reader collects values and errors from getenv.
type Reader struct {
	getenv func(string) string
	errs   []error
}

// New returns a Reader over getenv (os.Getenv in main).
func New(getenv func(string) string) *Reader { return &Reader{getenv: getenv} }

// Err returns every problem found, joined, or nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }

func (r *Reader) fail(name, format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// String returns the variable or def when unset.
func (r *Reader) String(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

// Required returns the variable or records that it is missing.
func (r *Reader) Required(name, form string) string {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		r.fail(name, "is required; set it to %s", form)
	}
	return v
}

// RedisURL returns a required Redis URL in one of the redisurl forms
// (one node, Sentinel, Cluster).
func (r *Reader) RedisURL(name string) string {
	v := r.Required(name, redisurl.Forms)
	if v == "" {
		return ""
	}
	if _, err := redisurl.Parse(v); err != nil {
		r.fail(name, "%v", err)
	}
	return v
}

// PostgresURL returns a required postgres:// URL; the host may be a
// comma-separated list (postgres://h1:5432,h2:5432/db?target_session_attrs=read-write),
// which pgx tries in order: a failover setup names its primary and standbys.
func (r *Reader) PostgresURL(name string) string {
	v := r.Required(name, postgresForm)
	if v == "" {
		return ""
	}
	r.checkPostgresURL(name, v)
	return v
}

// OptionalPostgresURL is PostgresURL for a variable that may be unset: it
// returns def then.
func (r *Reader) OptionalPostgresURL(name, def string) string {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	r.checkPostgresURL(name, v)
	return v
}

const postgresForm = "postgres://user:password@host:port/name (several hosts: host1:5432,host2:5432)"

func (r *Reader) checkPostgresURL(name, v string) {
	scheme, rest, ok := strings.Cut(v, "://")
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo := ""
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, authority = authority[:at+1], authority[at+1:]
	}
	valid := ok && (scheme == "postgres" || scheme == "postgresql") && authority != ""
	for _, h := range strings.Split(authority, ",") {
		if !valid {
			break
		}
		u, err := url.Parse(scheme + "://" + userinfo + h + tail)
		valid = err == nil && u.Hostname() != ""
	}
	if !valid {
		r.fail(name, "is not a valid postgres URL (value hidden); expected %s", postgresForm)
	}
}

// URL returns a required URL with one of schemes. The value is never echoed
// because URLs carry passwords.
func (r *Reader) URL(name string, schemes ...string) string {
	form := schemes[0] + "://user:password@host:port/name"
	if strings.HasPrefix(schemes[0], "http") {
		form = schemes[0] + "://host[:port][/path]"
	}
	v := r.Required(name, form)
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || !slices.Contains(schemes, u.Scheme) {
		r.fail(name, "is not a valid %s URL (value hidden); expected %s", strings.Join(schemes, "/"), form)
	}
	return v
}

// Int returns an integer in [lo, hi] or def when unset.
func (r *Reader) Int(name string, def, lo, hi int) int {
	s := r.String(name, "")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		r.fail(name, "%q is not an integer in %d..%d", s, lo, hi)
		return def
	}
	return n
}

// Duration returns a Go duration (e.g. 500ms, 30s) in [lo, hi] or def.
func (r *Reader) Duration(name string, def, lo, hi time.Duration) time.Duration {
	s := r.String(name, "")
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < lo || d > hi {
		r.fail(name, "%q is not a duration in %s..%s (e.g. 30s)", s, lo, hi)
		return def
	}
	return d
}

// Bool returns true|false (also 1|0, yes|no) or def when unset.
func (r *Reader) Bool(name string, def bool) bool {
	switch strings.ToLower(r.String(name, "")) {
	case "":
		return def
	case "true", "1", "yes", "on":
		return true
	case "false", "0", "no", "off":
		return false
	}
	r.fail(name, "%q is not true or false", r.String(name, ""))
	return def
}

// Addr returns a listen address like :8080 or 127.0.0.1:8080, or def.
func (r *Reader) Addr(name, def string) string {
	s := r.String(name, def)
	i := strings.LastIndex(s, ":")
	if i < 0 {
		r.fail(name, "%q is not host:port (e.g. :8080)", s)
		return def
	}
	if p, err := strconv.Atoi(s[i+1:]); err != nil || p < 0 || p > 65535 {
		r.fail(name, "%q has no valid port (e.g. :8080)", s)
	}
	return s
}

// AdminAddr returns ADMIN_ADDR, the listener of an app's health and
// /metrics. Unset, it is POD_IP:port when POD_IP is set (the Kubernetes
// downward API's status.podIP: the kubelet and Prometheus reach the pod IP)
// and 127.0.0.1:port otherwise: never every interface unless the operator
// says ":port".
func (r *Reader) AdminAddr(port int) string {
	def := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if ip := r.IP("POD_IP"); ip != "" {
		def = net.JoinHostPort(ip, strconv.Itoa(port))
	}
	return r.Addr("ADMIN_ADDR", def)
}

// IP returns the variable, an IPv4 or IPv6 address, or "" when unset.
func (r *Reader) IP(name string) string {
	s := r.String(name, "")
	if s != "" && net.ParseIP(s) == nil {
		r.fail(name, "%q is not an IP address", s)
		return ""
	}
	return s
}

// LogLevel returns LOG_LEVEL-style levels: debug, info, warn, error.
func (r *Reader) LogLevel(name string) slog.Level {
	s := strings.ToLower(r.String(name, "info"))
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		r.fail(name, "%q is not one of debug, info, warn, error", s)
		return slog.LevelInfo
	}
	return l
}
