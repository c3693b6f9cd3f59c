package memory

import (
	"fmt"
	"sync/atomic"

	"github.com/july/template/core/ports"
)

// outage is the simulated-outage switch every twin embeds; its SetDown is
// promoted to each of them.
type outage struct{ on atomic.Bool }

// SetDown switches the simulated outage on or off: while down every port
// method fails with an error wrapping ports.ErrUnavailable and changes
// nothing, as when the database or Redis behind the real adapter cannot be
// reached.
func (o *outage) SetDown(down bool) { o.on.Store(down) }

// down returns the outage error for the operation named by format and
// args, or nil while up. Callers check it before touching any state.
func (o *outage) down(format string, args ...any) error {
	if !o.on.Load() {
		return nil
	}
	return fmt.Errorf(format+": %w: simulated outage", append(args, ports.ErrUnavailable)...)
}
