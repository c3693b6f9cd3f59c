package postgres

import "time"

// Pool defaults used by Open when a Config field is zero. They suit one
// service replica talking to a Postgres with max_connections around 100.
const (
	DefaultMaxOpenConns    = 20
	DefaultMaxIdleConns    = 10
	DefaultConnMaxLifetime = 30 * time.Minute
	DefaultConnMaxIdleTime = 5 * time.Minute
	DefaultPingTimeout     = 5 * time.Second
)

// Config says where Postgres is and how to size the pool. Zero fields take
// the DefaultXxx values.
type Config struct {
	// URL is a postgres:// URL or a key=value DSN (DATABASE_URL). It may
	// point at a pooler in transaction mode (PgBouncer): nothing the pool
	// does needs a session of its own.
	URL string
	// DirectURL is a direct connection to the same database
	// (DATABASE_DIRECT_URL), for what needs a session: RelayModule's
	// LISTEN. Empty: URL.
	DirectURL string
	// Env names the variable URL came from, for Open's errors (default
	// "DATABASE_URL").
	Env string
	// RelayClaimBytes caps the payload bytes of one claim of RelayModule's
	// store (pgoutbox.Config.ClaimBytes; default its default). A relay
	// with many loops divides its memory budget by them.
	RelayClaimBytes int64
	// MaxOpenConns caps open connections (default DefaultMaxOpenConns).
	MaxOpenConns int
	// MaxIdleConns caps idle connections (default DefaultMaxIdleConns).
	MaxIdleConns int
	// ConnMaxLifetime recycles connections older than this (default DefaultConnMaxLifetime).
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes connections idle longer than this (default DefaultConnMaxIdleTime).
	ConnMaxIdleTime time.Duration
	// PingTimeout bounds the ping done by Open (default DefaultPingTimeout).
	PingTimeout time.Duration
	// RuntimeParams are startup parameters sent on connect, e.g.
	// {"application_name": "relay"}. A pooler in transaction mode refuses
	// all but a few (PgBouncer: application_name, client_encoding,
	// DateStyle, TimeZone, standard_conforming_strings), so the template
	// sends application_name only and sets anything else per transaction.
	RuntimeParams map[string]string
	// NotifyInTx keeps the outbox insert trigger's NOTIFY inside each
	// appending transaction instead of the pool's post-commit wake-up
	// (wake.go). The wake-up is as fast either way; in-transaction NOTIFY
	// serialises concurrent commits on Postgres's notify lock. Setting
	// outbox.notify in the URL or in RuntimeParams (a direct connection
	// only) also leaves the trigger in charge (off: no wake-up at all, the
	// relay's poll finds the events).
	NotifyInTx bool
}

// directURL is DirectURL, or URL when it is empty.
func (c Config) directURL() string {
	if c.DirectURL != "" {
		return c.DirectURL
	}
	return c.URL
}

func (c Config) withDefaults() Config {
	if c.Env == "" {
		c.Env = "DATABASE_URL"
	}
	if c.MaxOpenConns <= 0 {
		c.MaxOpenConns = DefaultMaxOpenConns
	}
	if c.MaxIdleConns <= 0 {
		c.MaxIdleConns = DefaultMaxIdleConns
	}
	if c.MaxIdleConns > c.MaxOpenConns {
		c.MaxIdleConns = c.MaxOpenConns
	}
	if c.ConnMaxLifetime <= 0 {
		c.ConnMaxLifetime = DefaultConnMaxLifetime
	}
	if c.ConnMaxIdleTime <= 0 {
		c.ConnMaxIdleTime = DefaultConnMaxIdleTime
	}
	if c.PingTimeout <= 0 {
		c.PingTimeout = DefaultPingTimeout
	}
	return c
}
