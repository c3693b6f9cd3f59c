package idemhttp

import (
	"context"

	"github.com/july/template/core/ports"
)

// Key is the validated idempotency key of a request: scope, request id and
// fingerprint. Pass it to pgidem.Insert.
type Key = ports.IdempotencyKey

type keyCtxKey struct{}

// WithKey returns ctx carrying k.
func WithKey(ctx context.Context, k Key) context.Context {
	return context.WithValue(ctx, keyCtxKey{}, k)
}

// KeyFrom returns the Key that Middleware stored for the request, and false
// when the route has no idempotency middleware.
func KeyFrom(ctx context.Context) (Key, bool) {
	k, ok := ctx.Value(keyCtxKey{}).(Key)
	return k, ok
}
