package devices_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sweep"
	"github.com/july/template/examples/devices"
)

// After the idempotency retention the upload's key and stored 202 are
// cleared, the task stays readable, and the same upload again is a new
// task (docs/openapi.yaml).
func TestUploadKeyExpiresAfterRetention(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	const csv = "device_sn,target_agent_id\nRT00000001,agent-a\n"
	body, ct := multipartCSVWith(t, "fixed-boundary-rt", devices.FormField, csv)
	upload := func() (int, string, string) {
		r := v.do(t, http.MethodPost, "/api/v1/device-assignments", "user-1", body, "Content-Type", ct, "X-Request-ID", "upload-ttl-0001")
		require.Equal(t, http.StatusAccepted, r.Status, "body %s", r.Body)
		var c devices.Created
		r.Decode(t, &c)
		return r.Status, c.TaskID, r.Header.Get(idemhttp.HeaderReplayed)
	}
	_, first, _ := upload()
	_, again, replayed := upload()
	require.Equal(t, first, again)
	require.Equal(t, "true", replayed, "rule: within the window the upload replays")

	relay, err := devices.Domain().Relay(domain.RelayDeps{DB: v.db, Clock: ports.SystemClock, Logger: v.log})
	require.NoError(t, err)
	later := time.Now().Add(sweep.DefaultIdempotencyRetention + time.Hour)
	job, err := sweep.NewIdempotencyRetention(relay.IdempotencyTables, ports.ClockFunc(func() time.Time { return later }), sweep.IdempotencyRetentionConfig{Logger: v.log})
	require.NoError(t, err)
	n, err := job.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n, "rule: the domain registers ex_devices_task; its one record is cleared")

	require.Equal(t, first, v.getTask(t, "user-1", first).TaskID, "rule: the task stays")
	_, fresh, replayed := upload()
	require.Empty(t, replayed, "rule: after expiry the same upload is a new request")
	require.NotEqual(t, first, fresh, "rule: a new task")
}
