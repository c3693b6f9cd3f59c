package ports

import (
	"context"
	"time"

	"github.com/july/template/core/sysconfig"
)

// ConfigStore is the durable truth of tb_system_config. When the database
// cannot be reached every method returns promptly an error wrapping
// ErrUnavailable and changes nothing.
type ConfigStore interface {
	// Get returns the row of key or ErrNotFound.
	Get(ctx context.Context, key string) (sysconfig.Stored, error)

	// List returns the rows of module (every row when module is ""),
	// sorted by key.
	List(ctx context.Context, module string) ([]sysconfig.Stored, error)

	// Apply writes plan.Row(now) with a compare-and-set on plan.BaseVersion
	// (insert when 0, update WHERE version = BaseVersion otherwise) and the
	// accepted audit record, in one transaction. When the version moved it
	// writes nothing and returns a *sysconfig.VersionConflictError with the
	// actual version. If the audit write fails the row change rolls back.
	Apply(ctx context.Context, plan sysconfig.Plan, audit AuditRecord, now time.Time) (sysconfig.Stored, error)

	// RecordRejected writes the audit record of a refused update attempt.
	RecordRejected(ctx context.Context, audit AuditRecord) error
}

// ConfigPins records which running processes take a config key from their
// environment instead of from system config (sysconfig.Pin). A process
// announces its pins at start and again before they go stale, and
// withdraws them when it stops; a crashed process's pins age out.
type ConfigPins interface {
	// Announce replaces owner's pins with pins, stamped at now.
	Announce(ctx context.Context, owner string, pins []sysconfig.Pin, now time.Time) error

	// Withdraw deletes owner's pins.
	Withdraw(ctx context.Context, owner string) error

	// Active returns the pins announced at or after since, by key.
	Active(ctx context.Context, since time.Time) (map[string][]sysconfig.Pin, error)
}

// ConfigCache is a short-lived copy of config rows (Redis in production).
// It is never the truth: every method may fail with an error wrapping
// ErrUnavailable and callers then read the ConfigStore.
type ConfigCache interface {
	// Get returns the cached row of key, or ErrNotFound on a miss.
	Get(ctx context.Context, key string) (sysconfig.Stored, error)

	// Fill caches s for ttl unless the cache knows a newer version of the
	// key (a cached row or an invalidation marker with a higher version), so
	// a slow reader can never put back a value an update replaced. It
	// reports whether s was stored.
	Fill(ctx context.Context, s sysconfig.Stored, ttl time.Duration) (bool, error)

	// Invalidate drops the cached row of key and remembers, for ttl, that
	// versions below minVersion are stale.
	Invalidate(ctx context.Context, key string, minVersion int64, ttl time.Duration) error
}

// Guard is a short, best-effort mutual exclusion (Redis SET NX PX) that
// reduces duplicate concurrent work. It is never a correctness mechanism:
// when it is unavailable or expires, the database constraints still decide.
// When its store cannot be reached Acquire and Release return promptly an
// error wrapping ErrUnavailable and change nothing.
type Guard interface {
	// Acquire takes key for owner for ttl. It returns false, nil when someone
	// else holds it.
	Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error)

	// Release frees key only if owner still holds it, and reports whether it did.
	Release(ctx context.Context, key, owner string) (bool, error)

	// Owner returns the owner holding key, or "" when nobody does (never
	// taken, released or expired). It changes nothing. A caller that
	// encodes what it holds the key for in owner (e.g. the request's
	// fingerprint) learns it here after Acquire reports false.
	Owner(ctx context.Context, key string) (string, error)
}
