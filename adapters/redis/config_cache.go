package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// ConfigCache defaults.
const (
	// DefaultConfigPrefix is the default CacheConfig.Prefix.
	DefaultConfigPrefix = "sysconfig:"
	// DefaultTimeout is the default CacheConfig.Timeout and GuardConfig.Timeout:
	// a cache or guard that answers slower than this is treated as down.
	DefaultTimeout = 200 * time.Millisecond
)

// CacheConfig configures a ConfigCache. The zero value is valid.
type CacheConfig struct {
	// Prefix starts every key the cache writes. Default: DefaultConfigPrefix.
	Prefix string
	// Timeout bounds every call, on top of the caller's context.
	// Default: DefaultTimeout.
	Timeout time.Duration
}

// ConfigCache is ports.ConfigCache on Redis. The row of a config key lives
// at Prefix+"v1:{"+key+"}" as JSON; its invalidation marker, the lowest
// version still allowed in, lives next to it at the same key plus ":min".
// Fill and Invalidate are Lua scripts, so the version check and the write
// are atomic against concurrent fills and invalidations.
type ConfigCache struct {
	client rueidis.Client
	cfg    CacheConfig
}

var _ ports.ConfigCache = (*ConfigCache)(nil)

// NewConfigCache returns a ConfigCache on client. It returns an error for a
// nil client or a negative timeout.
func NewConfigCache(client rueidis.Client, cfg CacheConfig) (*ConfigCache, error) {
	if client == nil {
		return nil, errors.New("redis: NewConfigCache needs a rueidis client")
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("redis: CacheConfig.Timeout %s is negative; use 0 for DefaultTimeout", cfg.Timeout)
	}
	cfg.Prefix = cmp.Or(cfg.Prefix, DefaultConfigPrefix)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	return &ConfigCache{client: client, cfg: cfg}, nil
}

// rowKey and markerKey share the {key} hash tag, so one script may touch both.
func (c *ConfigCache) rowKey(key string) string    { return c.cfg.Prefix + "v1:{" + key + "}" }
func (c *ConfigCache) markerKey(key string) string { return c.rowKey(key) + ":min" }

// cachedRow is the JSON form of a sysconfig.Stored in the cache. The Lua
// scripts read "version", so its name is part of the v1 key format.
type cachedRow struct {
	Key         string    `json:"key"`
	Value       string    `json:"value"`
	Type        string    `json:"type"`
	Module      string    `json:"module"`
	Description string    `json:"description"`
	ReadOnly    bool      `json:"readonly"`
	Version     int64     `json:"version"`
	UpdatedAt   time.Time `json:"updated_at"`
	UpdatedBy   string    `json:"updated_by"`
}

// Get implements ports.ConfigCache. A miss returns ports.ErrNotFound; an
// entry that does not decode is reported as ErrUnavailable, so the caller
// reads the store.
func (c *ConfigCache) Get(ctx context.Context, key string) (sysconfig.Stored, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	b, err := c.client.Do(ctx, c.client.B().Get().Key(c.rowKey(key)).Build()).AsBytes()
	if err != nil {
		return sysconfig.Stored{}, fmt.Errorf("get cached config %q: %w", key, translate(err))
	}
	var r cachedRow
	if err := json.Unmarshal(b, &r); err != nil {
		return sysconfig.Stored{}, fmt.Errorf("decode cached config %q: %w: %w", key, ports.ErrUnavailable, err)
	}
	return sysconfig.Stored{
		Key: r.Key, Value: r.Value, Type: sysconfig.Type(r.Type), Module: r.Module,
		Description: r.Description, ReadOnly: r.ReadOnly, Version: r.Version,
		UpdatedAt: r.UpdatedAt, UpdatedBy: r.UpdatedBy,
	}, nil
}

// fillScript stores ARGV[1] (version ARGV[2]) at KEYS[1] for ARGV[3] ms
// unless the cached row has a higher version or the marker KEYS[2] says
// versions below a higher one are stale. It returns 1 when it stored.
var fillScript = rueidis.NewLuaScript(`
local v = tonumber(ARGV[2])
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, row = pcall(cjson.decode, cur)
  if ok and type(row) == 'table' and tonumber(row.version) and tonumber(row.version) > v then
    return 0
  end
end
local min = tonumber(redis.call('GET', KEYS[2]))
if min and min > v then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1
`)

// Fill implements ports.ConfigCache. A ttl below one millisecond is an error.
func (c *ConfigCache) Fill(ctx context.Context, s sysconfig.Stored, ttl time.Duration) (bool, error) {
	ms, err := milliseconds("fill cached config "+strconv.Quote(s.Key), ttl)
	if err != nil {
		return false, err
	}
	b, err := json.Marshal(cachedRow{
		Key: s.Key, Value: s.Value, Type: string(s.Type), Module: s.Module,
		Description: s.Description, ReadOnly: s.ReadOnly, Version: s.Version,
		UpdatedAt: s.UpdatedAt, UpdatedBy: s.UpdatedBy,
	})
	if err != nil {
		return false, fmt.Errorf("encode cached config %q: %w", s.Key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	keys := []string{c.rowKey(s.Key), c.markerKey(s.Key)}
	args := []string{string(b), strconv.FormatInt(s.Version, 10), strconv.FormatInt(ms, 10)}
	n, err := fillScript.Exec(ctx, c.client, keys, args).AsInt64()
	if err != nil {
		return false, fmt.Errorf("fill cached config %q: %w", s.Key, translate(err))
	}
	return n == 1, nil
}

// invalidateScript deletes the row KEYS[1] and raises the marker KEYS[2] to
// ARGV[1] (never lowers it), expiring in ARGV[2] ms.
var invalidateScript = rueidis.NewLuaScript(`
redis.call('DEL', KEYS[1])
local min = ARGV[1]
local cur = redis.call('GET', KEYS[2])
if cur and tonumber(cur) and tonumber(cur) > tonumber(min) then
  min = cur
end
redis.call('SET', KEYS[2], min, 'PX', ARGV[2])
return 1
`)

// Invalidate implements ports.ConfigCache. A ttl below one millisecond is an
// error; the marker's ttl should outlive the slowest reader (a few seconds).
func (c *ConfigCache) Invalidate(ctx context.Context, key string, minVersion int64, ttl time.Duration) error {
	ms, err := milliseconds("invalidate cached config "+strconv.Quote(key), ttl)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	keys := []string{c.rowKey(key), c.markerKey(key)}
	args := []string{strconv.FormatInt(minVersion, 10), strconv.FormatInt(ms, 10)}
	if err := invalidateScript.Exec(ctx, c.client, keys, args).Error(); err != nil {
		return fmt.Errorf("invalidate cached config %q: %w", key, translate(err))
	}
	return nil
}
