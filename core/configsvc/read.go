package configsvc

import (
	"context"
	"errors"
	"fmt"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// Value is the runtime read for business code: the cache, then Postgres
// (refilling the cache), then the key's registered fallback. A stored value
// that does not parse or is out of range never reaches the caller: the last
// verified value or the registered default is returned and an alert raised.
// It returns an error only for a key no module registered.
func (s *Service) Value(ctx context.Context, key string) (sysconfig.Value, error) {
	spec, ok := s.reg.Lookup(key)
	if !ok {
		return sysconfig.Value{}, fmt.Errorf("read system config %q: %w", key, sysconfig.ErrKeyNotRegistered)
	}
	stored, err := s.load(ctx, key)
	var res sysconfig.Resolution
	if err != nil {
		res = sysconfig.ResolveUnavailable(spec, s.lastVerified(key))
	} else {
		res = sysconfig.Resolve(spec, stored, s.lastVerified(key))
	}
	if res.Source == sysconfig.SourceStored {
		s.remember(key, res.Value)
	}
	if res.Alert != nil {
		s.opts.AlertFunc(ctx, *res.Alert)
	}
	return res.Value, nil
}

// load returns the row of key (nil when none), from the cache when it can.
func (s *Service) load(ctx context.Context, key string) (*sysconfig.Stored, error) {
	if row, err := s.cache.Get(ctx, key); err == nil {
		return &row, nil
	} else if !errors.Is(err, ports.ErrNotFound) {
		s.opts.Logger.WarnContext(ctx, "config cache unavailable; reading Postgres", "config_key", key, "error", err)
	}
	row, err := s.store.Get(ctx, key)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if _, err := s.cache.Fill(ctx, row, s.opts.CacheTTL); err != nil {
		s.opts.Logger.WarnContext(ctx, "config cache refill failed; Postgres stays the truth", "config_key", key, "error", err)
	}
	return &row, nil
}

func (s *Service) lastVerified(key string) *sysconfig.Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.verified[key]; ok {
		return &v
	}
	return nil
}

func (s *Service) remember(key string, v sysconfig.Value) {
	s.mu.Lock()
	s.verified[key] = v
	s.mu.Unlock()
}
