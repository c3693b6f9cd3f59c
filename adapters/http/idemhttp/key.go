package idemhttp

import (
	"context"

	"github.com/july/template/core/ports"
)

type keyCtxKey struct{}

// WithKey returns ctx carrying k, the validated idempotency key of a
// request (scope, request id and fingerprint).
func WithKey(ctx context.Context, k ports.IdempotencyKey) context.Context {
	return context.WithValue(ctx, keyCtxKey{}, k)
}

// KeyFrom returns the key that Middleware stored for the request (pass it
// to pgidem.Insert), and false when the route has no
// idempotency middleware.
func KeyFrom(ctx context.Context) (ports.IdempotencyKey, bool) {
	k, ok := ctx.Value(keyCtxKey{}).(ports.IdempotencyKey)
	return k, ok
}
