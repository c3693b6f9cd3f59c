package outboxcmd_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/cli/outboxcmd"
)

// REGRESSION: an oversized or unprintable --batch-id (and the list's
// --type and --correlation-id) went on to the database and its log; the
// replay refused it only after opening the store. Free-text arguments are
// now bounded and checked before anything is opened: exit 2, nothing
// opened, and the value is not echoed.
func TestOperatorArgumentsAreBoundedBeforeAnyQuery(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 1<<20)
	for name, args := range map[string][]string{
		"oversized batch id":   {"replay", "--event-id", "0b6a3f5e-8a43-4c1f-9d2c-1f0e2a3b4c5d", "--operator", "op-1", "--reason", "test", "--batch-id", huge},
		"batch id with a CR":   {"replay", "--event-id", "0b6a3f5e-8a43-4c1f-9d2c-1f0e2a3b4c5d", "--operator", "op-1", "--reason", "test", "--batch-id", "b\rforged"},
		"oversized event type": {"list", "--type", huge},
		"oversized corr id":    {"list", "--correlation-id", huge},
	} {
		opened := false
		open := func(context.Context) (outboxcmd.Deps, func(), error) {
			opened = true
			return outboxcmd.Deps{}, func() {}, outboxcmd.ErrConfig
		}
		var stdout, stderr bytes.Buffer
		code := outboxcmd.Run(t.Context(), args, open, "usage", &stdout, &stderr)
		require.Equal(t, 2, code, "%s: %s", name, stderr.String())
		require.False(t, opened, "%s: refused before the store is opened", name)
		require.NotContains(t, stderr.String(), "xxxxxxxx", "%s: the value is not echoed", name)
	}
}
