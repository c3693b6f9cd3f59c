package idemhttp

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
)

// HeaderIdempotencyKey is the IETF draft's header, accepted as an alias of
// X-Request-ID. It wins when both are sent.
const HeaderIdempotencyKey = "Idempotency-Key"

// DefaultGuardTTL is Config.GuardTTL's default: longer than a create
// command should take, short enough that a crashed holder blocks retries
// only briefly.
const DefaultGuardTTL = 10 * time.Second

// Config configures Middleware for one create operation.
type Config struct {
	// Operation is the command's stable name, e.g. "order.create"
	// (idempotency.Scope rules). Required.
	Operation string
	// Fingerprinter fingerprints request bodies. Required.
	Fingerprinter *idempotency.Fingerprinter
	// Command, when set, declares the route's business fields: it decodes
	// the body into the route's typed command, and the fingerprint is
	// idempotency.FromCommand of it (v2), so a retry with an extra field,
	// another key order or number spelling replays, and any change to a
	// declared field is IDEMPOTENCY_KEY_REUSED. A body it cannot decode
	// falls back to the Fingerprinter's fingerprint; the handler then
	// answers the error itself.
	Command func(body []byte) (any, error)
	// Previous lists Fingerprinters of other versions the route
	// used before (another Version or Volatile list): a record stored by
	// one of them is compared with the request recomputed by it, so a
	// byte-identical retry replays across the change. Default: every other
	// version this build computes, with its default FingerprinterConfig.
	Previous []*idempotency.Fingerprinter
	// Guard, when set, is taken per scope and key while the handler runs,
	// holding the request's fingerprint: a concurrent duplicate (same
	// fingerprint) gets 409 and a reused key (another fingerprint) 422,
	// both without touching the database. Its failures are logged and
	// ignored: Postgres then gives the same answers.
	Guard ports.Guard
	// GuardTTL bounds a guard. Default: DefaultGuardTTL.
	GuardTTL time.Duration
	// PrincipalFunc returns the caller the key is scoped to. Default: the
	// subject of auth.PrincipalFrom; false answers 401.
	PrincipalFunc func(echo.Context) (string, bool)
	// Logger receives guard failures. Default: slog.Default().
	Logger *slog.Logger

	orphans *orphans
}

// Middleware returns the middleware for an idempotent create route. For
// every request, in order, it: takes the key from Idempotency-Key or the
// client's X-Request-ID (400 IDEMPOTENCY_KEY_MISSING / _INVALID, before any
// lookup); resolves the principal (401); reads and fingerprints the body
// (400 REQUEST_INVALID for invalid JSON or malformed multipart; see
// fingerprintBody) and restores it; stores the Key for
// KeyFrom; takes the optional guard (when another request holds it: 422
// IDEMPOTENCY_KEY_REUSED when that request's fingerprint differs, else 409
// IDEMPOTENCY_IN_PROGRESS with "Retry-After: 1"); runs the handler; and
// releases the guard. An idempotency.ErrInProgress from the handler also
// gets "Retry-After: 1".
//
// The body is read here, so a route that raises its limit must list
// httpx.BodyLimit before this middleware. It returns an error for an
// invalid Config.
func Middleware(cfg Config) (echo.MiddlewareFunc, error) {
	if err := (idempotency.Scope{Principal: "x", Operation: cfg.Operation}).Validate(); err != nil {
		return nil, fmt.Errorf("idemhttp: Config.Operation: %w", err)
	}
	if cfg.Fingerprinter == nil {
		return nil, errors.New("idemhttp: Config.Fingerprinter is nil: pass idempotency.NewFingerprinter's result")
	}
	if cfg.GuardTTL < 0 || (cfg.GuardTTL > 0 && cfg.GuardTTL < time.Millisecond) {
		return nil, fmt.Errorf("idemhttp: Config.GuardTTL %s is below 1ms; use 0 for DefaultGuardTTL", cfg.GuardTTL)
	}
	cfg.GuardTTL = cmp.Or(cfg.GuardTTL, DefaultGuardTTL)
	previous, err := previousFingerprinters(cfg.Fingerprinter, cfg.Previous)
	if err != nil {
		return nil, err
	}
	cfg.Previous = previous
	if cfg.PrincipalFunc == nil {
		cfg.PrincipalFunc = subject
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.orphans = &orphans{slots: make(chan struct{}, maxOrphans)}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key, err := cfg.key(c)
			if err != nil {
				return err
			}
			ctx := WithKey(c.Request().Context(), key)
			c.SetRequest(c.Request().WithContext(ctx))
			if cfg.Guard != nil {
				release, err := cfg.acquire(ctx, key)
				if err != nil {
					if errors.Is(err, idempotency.ErrInProgress) {
						return inProgress(c, err)
					}
					return errKeyReused.WithCause(err)
				}
				defer release()
			}
			err = next(c)
			if errors.Is(err, idempotency.ErrInProgress) {
				c.Response().Header().Set(echo.HeaderRetryAfter, "1")
			}
			return err
		}
	}, nil
}

// key builds the request's Key, validating the key format first.
func (cfg *Config) key(c echo.Context) (ports.IdempotencyKey, error) {
	r := c.Request()
	header, id := HeaderIdempotencyKey, unquote(strings.TrimSpace(r.Header.Get(HeaderIdempotencyKey)))
	if id == "" {
		raw, ok := rawRequestID(r.Context())
		if !ok {
			return ports.IdempotencyKey{}, httpx.Internal(errNoCapture)
		}
		header, id = httpx.HeaderRequestID, raw
	}
	switch err := idempotency.ValidateKey(id); {
	case errors.Is(err, idempotency.ErrKeyMissing):
		return ports.IdempotencyKey{}, errKeyMissing.WithCause(err)
	case err != nil:
		return ports.IdempotencyKey{}, errKeyInvalid.WithCause(err).WithDetails(keyDetail(header, err))
	}
	principal, ok := cfg.PrincipalFunc(c)
	if !ok {
		return ports.IdempotencyKey{}, auth.Unauthenticated(c, auth.ErrUnauthenticated)
	}
	scope := idempotency.Scope{Principal: principal, Operation: cfg.Operation}
	if err := scope.Validate(); err != nil {
		return ports.IdempotencyKey{}, httpx.Internal(err) // the authenticator produced an unusable principal
	}
	body, err := httpx.ReadBody(c)
	if err != nil {
		return ports.IdempotencyKey{}, fmt.Errorf("idemhttp: read body: %w", err)
	}
	ct, params := r.Header.Get(echo.HeaderContentType), pathParams(c)
	fp, dec, err := fingerprint(*cfg, ct, body)
	if dec != nil {
		c.Set(decodedKey, dec)
	}
	switch {
	case errors.Is(err, errMultipartMalformed):
		return ports.IdempotencyKey{}, errMultipartInvalid.WithCause(err)
	case err != nil:
		return ports.IdempotencyKey{}, errBodyInvalid.WithCause(err)
	}
	return ports.IdempotencyKey{Scope: scope, RequestID: id, Fingerprint: fp.WithParams(params), Refingerprint: cfg.refingerprint(ct, body, params)}, nil
}

// acquire takes the guard for key, its owner being the request's
// fingerprint and a random suffix. When another request holds it, the
// holder's fingerprint decides, as idempotency.Decide does for a stored
// record: another fingerprint is idempotency.ErrKeyReused (a reused key
// never waits), the same one (or a holder that names none) ErrInProgress.
// On a guard failure it logs and lets the request through, since the
// database gives the same answers.
func (cfg *Config) acquire(ctx context.Context, key ports.IdempotencyKey) (release func(), err error) {
	name, owner := GuardName(key), key.Fingerprint.String()+" "+rand.Text()
	unavailable := func(err error) (func(), error) {
		httpx.Logger(ctx, cfg.Logger).WarnContext(ctx, "idempotency guard unavailable; the database decides",
			slog.String("operation", key.Scope.Operation), slog.Any("error", err))
		return func() {}, nil
	}
	var ok bool
	for range 2 { // a holder that leaves between Acquire and Owner: try once more
		if ok, err = cfg.Guard.Acquire(ctx, name, owner, cfg.GuardTTL); err != nil {
			// A timed-out SET may still run on the server (a stall, not an
			// outage): release it, owner-checked, once Redis answers, or
			// it would answer 409 to retries of a committed request.
			cfg.orphans.release(ctx, cfg, name, owner)
			return unavailable(err)
		}
		if ok {
			break
		}
		holder, err := cfg.Guard.Owner(ctx, name)
		if err != nil {
			return unavailable(err)
		}
		if holder == "" {
			continue
		}
		if held, _ := idempotency.ParseFingerprint(strings.SplitN(holder, " ", 2)[0]); !held.IsZero() &&
			!held.Equal(idempotency.InVersion(held.Version, key.Fingerprint, key.Refingerprint)) {
			return nil, fmt.Errorf("idemhttp: guard held by a request with another fingerprint: %w", idempotency.ErrKeyReused)
		}
		return nil, fmt.Errorf("idemhttp: guard held by another request: %w", idempotency.ErrInProgress)
	}
	if !ok {
		return unavailable(errors.New("guard changed hands twice between Acquire and Owner"))
	}
	return func() {
		// The request context may be cancelled already; the guard has its
		// own timeout.
		rctx := context.WithoutCancel(ctx)
		if _, err := cfg.Guard.Release(rctx, name, owner); err != nil {
			// Not left for its TTL: retries of this (committed) request
			// would get 409 until then.
			cfg.orphans.release(rctx, cfg, name, owner)
		}
	}, nil
}

// GuardName is the Redis guard key the middleware takes for k:
// "idem:<operation>:<hash of principal and key>", unambiguous whatever the
// principal contains, and free of user ids. Operators and tests use it to
// find or hold the guard of one request.
func GuardName(k ports.IdempotencyKey) string {
	h := sha256.Sum256([]byte(k.Scope.Principal + "\x00" + k.RequestID))
	return "idem:" + k.Scope.Operation + ":" + hex.EncodeToString(h[:16])
}

func inProgress(c echo.Context, cause error) error {
	c.Response().Header().Set(echo.HeaderRetryAfter, "1")
	return errInProgress.WithCause(cause)
}

// unquote accepts the draft's structured-field form (a quoted string).
// Key characters never need escapes, so stripping the quotes is enough.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// pathParams is the route's path parameters, as the router gives them: the
// resource a create command acts on is part of what it means.
func pathParams(c echo.Context) map[string]string {
	names := c.ParamNames()
	if len(names) == 0 {
		return nil
	}
	params := make(map[string]string, len(names))
	for i, v := range c.ParamValues() {
		params[names[i]] = v
	}
	return params
}

func subject(c echo.Context) (string, bool) {
	p, ok := auth.PrincipalFrom(c.Request().Context())
	return p.Subject, ok && p.Subject != ""
}
