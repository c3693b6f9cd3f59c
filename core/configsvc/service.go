// Package configsvc is part of the service floor (see package relay): it
// runs the system-config use cases over the ports: admin
// list/get/update through the sysconfig pipeline with an audit record for
// every attempt, and the runtime read path (cache, then Postgres, then the
// registered fallback) that business code uses.
//
// Postgres is the truth. The cache is filled after reads and invalidated
// after a committed update; a cache that is down, slow or fails to
// invalidate never changes what is stored, and a stale refill is refused by
// the cache itself (ports.ConfigCache.Fill).
//
// It also registers the template's own keys (TemplateSpecs), whose
// defaults and ranges come from the packages that use them, and keeps a
// running relay on them (RelayTuner: re-reads relay.delivery.* and
// announces the keys the relay's environment pins).
package configsvc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// DefaultCacheTTL is how long a cached config row lives: five minutes
// bounds how long a missed invalidation can serve a stale value.
const DefaultCacheTTL = 5 * time.Minute

// Options are a Service's optional collaborators.
type Options struct {
	// CacheTTL defaults to DefaultCacheTTL.
	CacheTTL time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// AlertFunc receives operator alerts (fallback used, invalidation
	// failed). Default: an ERROR log line. Wire it to a metric too.
	AlertFunc func(ctx context.Context, a sysconfig.Alert)
	// Pins, when set, are the keys running processes take from their
	// environment: views show them (pinned_by) and updates of a pinned key
	// are refused with a *sysconfig.PinnedError. Nil: no key is pinned.
	Pins ports.ConfigPins
	// PinTTL is how long an announced pin counts without being announced
	// again. Default DefaultPinTTL.
	PinTTL time.Duration
}

// DefaultPinTTL outlives three of the relay's 30-second announcements, so
// one slow round never unpins a key, and a crashed relay's pins are gone
// within two minutes.
const DefaultPinTTL = 2 * time.Minute

// Service is the system-config application service.
type Service struct {
	reg   *sysconfig.Registry
	store ports.ConfigStore
	cache ports.ConfigCache
	clock ports.Clock
	opts  Options

	mu       sync.Mutex
	verified map[string]sysconfig.Value
}

// Alert codes raised by the service.
const (
	// CodeInvalidationFailed: a committed update could not invalidate the cache.
	CodeInvalidationFailed = "CONFIG_CACHE_INVALIDATION_FAILED"
	// CodeAuditFailed: the audit record of a rejected attempt was not written.
	CodeAuditFailed = "CONFIG_AUDIT_FAILED"
)

// New returns a Service. cache may be nil in a process that only reads a
// few keys at start (the relay): reads then go to Postgres.
func New(reg *sysconfig.Registry, store ports.ConfigStore, cache ports.ConfigCache, clock ports.Clock, opts Options) (*Service, error) {
	if reg == nil || store == nil || clock == nil {
		return nil, errors.New("configsvc: registry, store and clock are required")
	}
	if cache == nil {
		cache = noCache{}
	}
	opts.CacheTTL = cmp.Or(opts.CacheTTL, DefaultCacheTTL)
	opts.PinTTL = cmp.Or(opts.PinTTL, DefaultPinTTL)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.AlertFunc == nil {
		log := opts.Logger
		opts.AlertFunc = func(ctx context.Context, a sysconfig.Alert) {
			log.ErrorContext(ctx, a.Message, "alert_code", a.Code, "config_key", a.Key, "component", "system-config")
		}
	}
	return &Service{reg: reg, store: store, cache: cache, clock: clock, opts: opts, verified: map[string]sysconfig.Value{}}, nil
}

// Meta carries the request's ids into audit records.
type Meta struct {
	RequestID     string
	CorrelationID string
}

// List returns the views of module ("" for all): every registered key (its
// default at version 0 when it has no row yet) and every stored key no
// module registered (read-only, registered=false), sorted by key.
func (s *Service) List(ctx context.Context, module string) ([]sysconfig.View, error) {
	rows, err := s.store.List(ctx, module)
	if err != nil {
		return nil, fmt.Errorf("list system configs: %w", err)
	}
	byKey := make(map[string]*sysconfig.Stored, len(rows))
	for i := range rows {
		byKey[rows[i].Key] = &rows[i]
	}
	var views []sysconfig.View
	specs := s.reg.List(module) // "" lists every module's keys
	for i := range specs {
		views = append(views, sysconfig.ViewOf(&specs[i], byKey[specs[i].Key]))
		delete(byKey, specs[i].Key)
	}
	for _, row := range byKey {
		views = append(views, sysconfig.ViewOf(nil, row))
	}
	slices.SortFunc(views, func(a, b sysconfig.View) int { return cmp.Compare(a.Key, b.Key) })
	pins := s.pins(ctx)
	for i := range views {
		views[i].PinnedBy = sysconfig.PinnedBy(pins[views[i].Key])
	}
	return views, nil
}

// pins returns the active pins by key. A failed read is logged and treated
// as "none": pins only annotate views and guard updates, and the store
// errors of the same request say more.
func (s *Service) pins(ctx context.Context) map[string][]sysconfig.Pin {
	if s.opts.Pins == nil {
		return nil
	}
	pins, err := s.opts.Pins.Active(ctx, s.clock.Now().Add(-s.opts.PinTTL))
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "system config: reading environment pins failed; views omit pinned_by", "error", err.Error())
		return nil
	}
	return pins
}

// Get returns the view of key, or an error wrapping
// sysconfig.ErrKeyNotRegistered when the key is neither registered nor stored.
func (s *Service) Get(ctx context.Context, key string) (sysconfig.View, error) {
	spec, registered := s.reg.Lookup(key)
	row, err := s.store.Get(ctx, key)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		if !registered {
			return sysconfig.View{}, fmt.Errorf("get system config %q: %w", key, sysconfig.ErrKeyNotRegistered)
		}
		return s.pinned(ctx, sysconfig.ViewOf(&spec, nil)), nil
	case err != nil:
		return sysconfig.View{}, fmt.Errorf("get system config %q: %w", key, err)
	}
	if !registered {
		return sysconfig.ViewOf(nil, &row), nil
	}
	return s.pinned(ctx, sysconfig.ViewOf(&spec, &row)), nil
}

func (s *Service) pinned(ctx context.Context, v sysconfig.View) sysconfig.View {
	v.PinnedBy = sysconfig.PinnedBy(s.pins(ctx)[v.Key])
	return v
}

// Update applies one key change through the update pipeline: registration,
// read-only, typed parse, constraints, optimistic version, then a
// transaction writing the row and its audit record, then cache
// invalidation. Every refused attempt is audited too. A failed invalidation
// keeps the committed change and raises an alert; the cache's TTL and its
// version marker bound the staleness.
func (s *Service) Update(ctx context.Context, req sysconfig.UpdateRequest, meta Meta) (sysconfig.View, error) {
	// An update without a version is unconditional (last writer wins): a
	// concurrent write between the read and the compare-and-set is retried
	// against the new version instead of answering a conflict the caller
	// never asked for. Each attempt that commits is audited once.
	for attempt := 1; ; attempt++ {
		v, retry, err := s.update(ctx, req, meta)
		if !retry || attempt >= MaxUnversionedAttempts {
			if retry {
				return sysconfig.View{}, s.reject(ctx, req, nil, err, meta, s.clock.Now())
			}
			return v, err
		}
	}
}

// MaxUnversionedAttempts bounds the compare-and-set retries of an update
// without a version under write contention on one key. Every conflict means
// another writer committed, so n concurrent writers need at most n attempts.
const MaxUnversionedAttempts = 50

// update is one attempt of Update; retry reports a version conflict of an
// unversioned request, which the caller retries without auditing it.
func (s *Service) update(ctx context.Context, req sysconfig.UpdateRequest, meta Meta) (sysconfig.View, bool, error) {
	now := s.clock.Now()
	var current *sysconfig.Stored
	row, err := s.store.Get(ctx, req.Key)
	switch {
	case err == nil:
		current = &row
	case !errors.Is(err, ports.ErrNotFound):
		return sysconfig.View{}, false, fmt.Errorf("read system config %q before update: %w", req.Key, err)
	}
	if by := sysconfig.PinnedBy(s.pins(ctx)[req.Key]); by != "" {
		return sysconfig.View{}, false, s.reject(ctx, req, current, &sysconfig.PinnedError{Key: req.Key, By: by}, meta, now)
	}
	plan, err := sysconfig.PlanUpdate(s.reg, req, current)
	if err != nil {
		return sysconfig.View{}, false, s.reject(ctx, req, current, err, meta, now)
	}
	stored, err := s.store.Apply(ctx, plan, toPort(plan.Decision, meta, now), now)
	if err != nil {
		var vc *sysconfig.VersionConflictError
		if errors.As(err, &vc) {
			if req.ExpectedVersion == nil {
				return sysconfig.View{}, true, err
			}
			return sysconfig.View{}, false, s.reject(ctx, req, current, err, meta, now)
		}
		_ = s.reject(ctx, req, current, err, meta, now) // best effort: the write itself failed
		return sysconfig.View{}, false, fmt.Errorf("apply system config %q: %w", req.Key, err)
	}
	if err := s.cache.Invalidate(ctx, req.Key, stored.Version, s.opts.CacheTTL); err != nil {
		s.opts.AlertFunc(ctx, sysconfig.Alert{Key: req.Key, Code: CodeInvalidationFailed,
			Message: fmt.Sprintf("配置 %s 已更新为版本 %d，但缓存失效失败；旧值最多保留 %s，请检查 Redis", req.Key, stored.Version, s.opts.CacheTTL)})
	}
	s.remember(req.Key, plan.Value)
	return sysconfig.ViewOf(&plan.Spec, &stored), false, nil
}

// RecordForbidden audits an update attempt by an authenticated caller who
// may not manage system config (RecordRejected with CodeForbidden).
func (s *Service) RecordForbidden(ctx context.Context, key, actor string, meta Meta) error {
	return s.RecordRejected(ctx, key, actor, CodeForbidden, "当前账号无权修改系统配置", meta)
}

// RecordRejected audits an update attempt by an authenticated caller that
// was refused before it reached Update: a malformed request, an
// unsupported media type, a body over the limit, a forbidden caller. key
// is the attempted key, or a placeholder when it is not safe to record;
// code is the machine code the caller was answered with; reason is a
// Chinese, value-free explanation. Every refusal then leaves an audit
// record (a public contract of the config API), not only those the
// pipeline decides.
//
// It returns ErrAuditIncomplete when actor or code is empty: an attempt
// without a subject has no one to audit (the access log records it).
func (s *Service) RecordRejected(ctx context.Context, key, actor, code, reason string, meta Meta) error {
	if actor == "" || code == "" {
		return fmt.Errorf("record rejected update of %q: %w", key, ErrAuditIncomplete)
	}
	return s.store.RecordRejected(ctx, ports.AuditRecord{
		Action: sysconfig.ActionUpdate, Actor: actor, ResourceType: ResourceType, ResourceID: key,
		Outcome: string(sysconfig.OutcomeRejected), Code: code, Reason: reason,
		RequestID: meta.RequestID, CorrelationID: meta.CorrelationID, At: s.clock.Now(),
	})
}

// ErrAuditIncomplete means a rejected attempt was recorded without an
// actor or a code; pass the authenticated subject and the answered code.
var ErrAuditIncomplete = errors.New("audit record needs an actor and a code")

// ResourceType is the audit resource type of system config records.
const ResourceType = "system_config"

// CodeForbidden is the audit code of an attempt by a non super admin.
const CodeForbidden = "FORBIDDEN"

func (s *Service) reject(ctx context.Context, req sysconfig.UpdateRequest, current *sysconfig.Stored, cause error, meta Meta, now time.Time) error {
	rec := toPort(sysconfig.RejectedDecision(s.reg, req, current, cause), meta, now)
	if err := s.store.RecordRejected(ctx, rec); err != nil {
		// The caller still gets the rejection; the missing audit record is
		// an operator problem, so it is raised as an alert, not hidden.
		s.opts.AlertFunc(ctx, sysconfig.Alert{Key: req.Key, Code: CodeAuditFailed,
			Message: fmt.Sprintf("配置 %s 的一次被拒绝的修改未能写入审计记录（%s）；请检查数据库与审计写入", req.Key, rec.Code)})
	}
	return cause
}

func toPort(a sysconfig.UpdateDecision, meta Meta, now time.Time) ports.AuditRecord {
	return ports.AuditRecord{
		Action: a.Action, Actor: a.Actor, ResourceType: ResourceType, ResourceID: a.Key,
		Outcome: string(a.Outcome), Code: a.Code, Reason: a.Reason,
		Before: a.OldValue, After: a.NewValue,
		RequestID: meta.RequestID, CorrelationID: meta.CorrelationID, At: now,
	}
}

// noCache is the cache of a Service built without one: always a miss.
type noCache struct{}

func (noCache) Get(context.Context, string) (sysconfig.Stored, error) {
	return sysconfig.Stored{}, ports.ErrNotFound
}
func (noCache) Fill(context.Context, sysconfig.Stored, time.Duration) (bool, error) {
	return false, nil
}
func (noCache) Invalidate(context.Context, string, int64, time.Duration) error { return nil }
