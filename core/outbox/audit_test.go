package outbox_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
)

// An audit record stamped by a producer in China time carries its instant
// in UTC: consumers read one format whatever the producer's time zone.
func TestAuditPayloadTimeIsUTC(t *testing.T) {
	t.Parallel()

	shanghai := time.FixedZone("CST", 8*3600)
	for name, p := range map[string]outbox.AuditPayload{
		"stamped by the caller": {At: time.Date(2030, 1, 1, 8, 0, 0, 0, shanghai)},
		"stamped at append":     {},
	} {
		p.Action, p.Actor, p.ResourceType, p.ResourceID, p.Outcome, p.RequestID = "update", "admin", "system_config", "demo.key", "accepted", "req-1"
		ev, err := outbox.NewAuditEvent(p, "00000000-0000-4000-8000-000000000001", time.Date(2030, 1, 1, 8, 0, 0, 0, shanghai))
		require.NoError(t, err, name)
		var got map[string]any
		require.NoError(t, json.Unmarshal(ev.Payload, &got), name)
		require.Equal(t, "2030-01-01T00:00:00Z", got["at"], name)
	}
}
