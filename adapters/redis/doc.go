// Package redis is the Redis adapter, built on rueidis: a ConfigCache (a
// short-lived, version-aware copy of tb_system_config rows) and a Guard
// (SET NX PX with an owner-checked release).
//
// Redis is never the truth here. Every call is bounded by a timeout and
// every failure other than a cache miss wraps ports.ErrUnavailable, so
// callers fall back to Postgres. Keys are built from a configurable prefix;
// each script touches keys that share one hash tag, so the adapter also
// works on a Redis Cluster.
package redis
