package devices_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
	"github.com/july/template/examples/devices"
)

// The upload's access line keeps the request id, route and status but
// never the CSV: the route is a file transfer.
func TestAccessLogNeverHoldsTheFile(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	const secretSN = "SECRETSN12345"
	r, id := v.upload(t, "user-log", "upload-log-000001", "device_sn,target_agent_id\n"+secretSN+",agent-secret-77\n")
	require.Equal(t, http.StatusAccepted, r.Status)

	logs := v.logs.String()
	require.NotContains(t, logs, secretSN, "rule: file bytes never reach the log")
	require.NotContains(t, logs, "agent-secret-77")
	require.NotContains(t, logs, "target_agent_id", "rule: not even the CSV header")

	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), "log line %s", l)
		if rec["msg"] == "access" && rec["method"] == http.MethodPost {
			line = rec
		}
	}
	require.NotNil(t, line, "no access line for the upload in %s", logs)
	require.Equal(t, "upload-log-000001", line["request_id"])
	require.Equal(t, "/api/v1/device-assignments", line["route"])
	require.EqualValues(t, http.StatusAccepted, line["status"])
	require.Equal(t, "user-log", line["user_id"])
	require.Contains(t, logs, id, "rule: the response (task id) is logged")
	require.Equal(t, []string{"/api/v1/device-assignments"}, []string{devices.AccessRoutes()[0].Path})
	require.Equal(t, redaction.PolicyFileTransfer, devices.AccessRoutes()[0].Policy)
}
