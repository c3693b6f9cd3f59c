package topup

import (
	"context"
	"fmt"

	"github.com/july/template/core/sysconfig"
)

// KeyMaxAmountCents is this domain's config key: the largest single top-up
// an operator allows, below the hard bound MaxAmountCents.
const KeyMaxAmountCents = "topup.limits.max_amount_cents"

// DefaultMaxAmountCents is the key's default (100,000.00 yuan).
const DefaultMaxAmountCents = 10_000_000

// KeyCreatesPerMinute bounds the creates one agent may send per clock
// minute; more is 429 TOPUP_CREATE_RATE_LIMITED with Retry-After,
// answered before the body is read or a connection is taken (ratehttp).
const KeyCreatesPerMinute = "topup.create.per_minute"

// DefaultCreatesPerMinute is KeyCreatesPerMinute's default.
const DefaultCreatesPerMinute = 60

// ConfigSpecs returns the domain's config keys. The service registers them
// once (apps/internal/domains), so the API validates updates against them
// and `migrate backfill seed-system-config` seeds their defaults.
func ConfigSpecs() []sysconfig.Spec {
	lo, hi, rateHi := int64(1), int64(MaxAmountCents), int64(100_000)
	return []sysconfig.Spec{{
		Key: KeyMaxAmountCents, Module: "topup", Type: sysconfig.TypeInt,
		Default: fmt.Sprint(DefaultMaxAmountCents), Min: &lo, Max: &hi,
		Description: fmt.Sprintf("单笔充值金额上限（分，%d-%d），超过时创建充值返回 422", lo, hi),
	}, {
		Key: KeyCreatesPerMinute, Module: "topup", Type: sysconfig.TypeInt,
		Default: fmt.Sprint(DefaultCreatesPerMinute), Min: &lo, Max: &rateHi,
		Description: fmt.Sprintf("每个代理商每分钟可发起的创建充值请求数（%d-%d），超过时返回 429", lo, rateHi),
	}}
}

// createsPerMinute reads KeyCreatesPerMinute (its default without a
// config service): ratehttp's LimitFunc.
func (s *Service) createsPerMinute(ctx context.Context) (int64, error) {
	if s.config == nil {
		return DefaultCreatesPerMinute, nil
	}
	v, err := s.config.Value(ctx, KeyCreatesPerMinute)
	if err != nil {
		return 0, fmt.Errorf("topup: read %s: %w", KeyCreatesPerMinute, err)
	}
	return v.Int(), nil
}

// ConfigReader reads a registered config value; *configsvc.Service is one.
type ConfigReader interface {
	Value(ctx context.Context, key string) (sysconfig.Value, error)
}

// configuredLimit reads the configured limit, 0 when s.config is nil (only
// MaxAmountCents applies). Call it before the create's transaction, never
// inside one: the read may ask Redis and, on a miss or with Redis down,
// take a second pooled Postgres connection, so inside the transaction a
// Redis outage (or merely a small pool) made concurrent creates wait on
// each other for ever (and a Redis call inside a transaction holds the
// transaction's locks and connection for as long as Redis takes).
// The read never fails for a registered key (the default or last verified
// value stands in while Postgres and Redis are down), so an error here is
// a wiring bug.
func (s *Service) configuredLimit(ctx context.Context) (int64, error) {
	if s.config == nil {
		return 0, nil
	}
	v, err := s.config.Value(ctx, KeyMaxAmountCents)
	if err != nil {
		return 0, fmt.Errorf("topup: read %s: %w", KeyMaxAmountCents, err)
	}
	return v.Int(), nil
}

// checkLimit refuses an amount above limit, the configuredLimit read before
// the transaction; 0 is no configured limit.
func checkLimit(amount, limit int64) error {
	if limit > 0 && amount > limit {
		return &ValidationError{Code: CodeAmountInvalid, Field: "amount_cents",
			Message: "充值金额超过单笔上限：请减少金额或分多次充值",
			Reason:  fmt.Sprintf("超过单笔充值上限 %d 分（系统配置 %s）：请减少金额或分多次充值", limit, KeyMaxAmountCents)}
	}
	return nil
}
