package tasks_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/tasks"
)

func TestView(t *testing.T) {
	t.Parallel()

	keys := []string{
		"task_id", "status", "status_name", "total_count", "success_count", "failed_count",
		"progress", "error_summary", "started_at", "finished_at", "updated_at",
	}

	decode := func(t *testing.T, v tasks.View) map[string]any {
		t.Helper()

		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
		got := make([]string, 0, len(m))
		for k := range m {
			got = append(got, k)
		}
		require.ElementsMatch(t, keys, got, "view keys of %s", raw)
		return m
	}

	t.Run("Pending", func(t *testing.T) {
		t.Parallel()

		task, err := tasks.NewTask("task-9", 4, t0)
		require.NoError(t, err)
		m := decode(t, task.View())
		require.Equal(t, "task-9", m["task_id"])
		require.EqualValues(t, 1, m["status"])
		require.Equal(t, "待处理", m["status_name"])
		require.EqualValues(t, 4, m["total_count"])
		require.EqualValues(t, 0, m["progress"])
		require.Nil(t, m["error_summary"])
		require.Nil(t, m["started_at"])
		require.Nil(t, m["finished_at"])
		require.Equal(t, t0.Format(time.RFC3339), m["updated_at"])
	})

	t.Run("Failed", func(t *testing.T) {
		t.Parallel()

		task, err := tasks.NewTask("task-9", 4, t0)
		require.NoError(t, err)
		task, err = task.Claim("w1", t0, ttl)
		require.NoError(t, err)
		task, err = task.RecordProgress("w1", task.Lease.Token, 1, 1, t0)
		require.NoError(t, err)
		end := t0.Add(time.Second)
		task, err = task.Fail("w1", task.Lease.Token, tasks.SummaryFor(tasks.CodeFileUnparsable), end)
		require.NoError(t, err)

		v := task.View()
		require.Equal(t, tasks.View{
			TaskID: "task-9", Status: tasks.Failed, StatusName: "已失败",
			TotalCount: 4, SuccessCount: 1, FailedCount: 1, Progress: 50,
			ErrorSummary: &tasks.Summary{Code: tasks.CodeFileUnparsable, Message: tasks.SummaryFor(tasks.CodeFileUnparsable).Message},
			StartedAt:    &t0, FinishedAt: &end, UpdatedAt: end,
		}, v)

		v.ErrorSummary.Message = "changed"
		require.NotEqual(t, "changed", task.Summary.Message, "the view must not alias the task")

		m := decode(t, task.View())
		sum, ok := m["error_summary"].(map[string]any)
		require.True(t, ok, "error_summary is an object: %v", m["error_summary"])
		keys := make([]string, 0, len(sum))
		for k := range sum {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		require.Equal(t, []string{"code", "message"}, keys)
		require.Equal(t, tasks.CodeFileUnparsable, sum["code"])
	})

	t.Run("NoLeaseLeaks", func(t *testing.T) {
		t.Parallel()

		task, err := tasks.NewTask("task-9", 1, t0)
		require.NoError(t, err)
		task, err = task.Claim("worker-secret-host", t0, ttl)
		require.NoError(t, err)
		raw, err := json.Marshal(task.View())
		require.NoError(t, err)
		require.NotContains(t, string(raw), "worker-secret-host")
	})
}
