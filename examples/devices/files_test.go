package devices_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/examples/devices"
)

// Regression: uploaded files were kept for ever (~21 MiB per principal
// per minute). The file sweep drops the file of every task finished
// before the retention's cutoff; a task still to run keeps its file, and
// the finished task keeps its row.
func TestFileSweepPurgesFinishedTasksFiles(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	csv := "device_sn,target_agent_id\nAA00000001,agent-1\n"
	_, done := v.upload(t, "user-1", "upload-sweep-done", csv)
	_, pending := v.upload(t, "user-1", "upload-sweep-todo", csv)
	r := v.do(t, http.MethodPost, "/api/v1/device-assignments/"+done+"/cancel", "user-1", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	size := func(id string) int {
		return v.count(t, "SELECT octet_length(file_content) FROM ex_devices_task WHERE id = ?", id)
	}

	n, err := devices.PurgeFiles(t.Context(), v.db, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "rule: a file within its retention is kept")
	require.Equal(t, len(csv), size(done))

	n, err = devices.PurgeFiles(t.Context(), v.db, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, 1, size(done), "rule: the finished task's file is dropped")
	require.Equal(t, len(csv), size(pending), "rule: a task still to run keeps its file")
	require.Equal(t, 2, v.count(t, "SELECT count(*) FROM ex_devices_task"), "rule: the task rows stay")

	n, err = devices.PurgeFiles(t.Context(), v.db, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "rule: a purge is idempotent")
}
