package ports

import "context"

// Probe is one named readiness dependency, e.g. "postgres". Check returns
// nil while the service answers. The name is all a readiness response
// reveals about a failure.
type Probe struct {
	Name  string
	Check func(ctx context.Context) error
}
