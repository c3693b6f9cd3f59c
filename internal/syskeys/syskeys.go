// Package syskeys registers the system-config keys the template itself uses.
// A business module registers its own keys the same way, in code, next to
// the code that reads them: the registry is the only place a writable key
// can come from.
package syskeys

import (
	"context"
	"errors"
	"fmt"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// Keys read by the relay and the API.
const (
	RelayBatchSize     = "relay.delivery.batch_size"
	RelayLeaseTTL      = "relay.delivery.lease_ttl_seconds"
	RelayMaxAttempts   = "relay.delivery.max_attempts"
	AccessLogBodyBytes = "http.access_log.body_cap_bytes"
)

func i64(n int64) *int64 { return &n }

// Specs returns the template's own key specs.
func Specs() []sysconfig.Spec {
	return []sysconfig.Spec{
		{Key: RelayBatchSize, Module: "relay", Type: sysconfig.TypeInt, Default: "500", Min: i64(1), Max: i64(1000),
			Description: "Relay 每轮领取的 Outbox 事件数量上限（1-1000）"},
		{Key: RelayLeaseTTL, Module: "relay", Type: sysconfig.TypeInt, Default: "30", Min: i64(5), Max: i64(600),
			Description: "Relay 领取事件后的租约时长（秒，5-600），超时后可被其他实例恢复"},
		{Key: RelayMaxAttempts, Module: "relay", Type: sysconfig.TypeInt, Default: "10", Min: i64(1), Max: i64(100),
			Description: "事件投递最大尝试次数（1-100），超过后标记为投递失败并告警"},
		{Key: AccessLogBodyBytes, Module: "http", Type: sysconfig.TypeInt, Default: "51200", Min: i64(1024), Max: i64(51200),
			Description: "Access Log 记录请求/响应体的最大字节数（1024-51200），先脱敏后截断并标记"},
	}
}

// Register adds the template's keys to reg.
func Register(reg *sysconfig.Registry) error { return reg.Register(Specs()...) }

// Startup reads one of the template's keys once, at process start: the
// stored value when it parses and is in range, else the registered default
// (unreachable database, no row, broken row), with an alert describing why.
// Processes that read a key this way apply a change on restart.
func Startup(ctx context.Context, store ports.ConfigStore, key string) (sysconfig.Value, *sysconfig.Alert, error) {
	reg := sysconfig.NewRegistry()
	if err := Register(reg); err != nil {
		return sysconfig.Value{}, nil, err
	}
	spec, ok := reg.Lookup(key)
	if !ok {
		return sysconfig.Value{}, nil, fmt.Errorf("read %q at start: %w", key, sysconfig.ErrKeyNotRegistered)
	}
	row, err := store.Get(ctx, key)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return sysconfig.Resolve(spec, nil, nil).Value, nil, nil
	case err != nil:
		res := sysconfig.ResolveUnavailable(spec, nil)
		return res.Value, res.Alert, nil
	}
	res := sysconfig.Resolve(spec, &row, nil)
	return res.Value, res.Alert, nil
}
