package tasks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/tasks"
)

func TestStatus(t *testing.T) {
	t.Parallel()

	tests := []struct {
		status   tasks.Status
		name     string
		english  string
		valid    bool
		terminal bool
	}{
		{tasks.Pending, "待处理", "pending", true, false},
		{tasks.Processing, "处理中", "processing", true, false},
		{tasks.Completed, "已完成", "completed", true, true},
		{tasks.Failed, "已失败", "failed", true, true},
		{tasks.Cancelled, "已取消", "cancelled", true, true},
		{0, "未知状态", "Status(0)", false, false},
		{6, "未知状态", "Status(6)", false, false},
		{-1, "未知状态", "Status(-1)", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.english, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.name, tt.status.Name(), "Name of %d", int16(tt.status))
			require.Equal(t, tt.english, tt.status.String(), "String of %d", int16(tt.status))
			require.Equal(t, tt.valid, tt.status.Valid(), "Valid of %d", int16(tt.status))
			require.Equal(t, tt.terminal, tt.status.Terminal(), "Terminal of %d", int16(tt.status))
		})
	}
}

func TestStatuses(t *testing.T) {
	t.Parallel()

	got := tasks.Statuses()
	require.Len(t, got, 5)
	for i, s := range got {
		require.Equal(t, tasks.Status(i+1), s, "Statuses()[%d]", i)
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()

	for v := -2; v <= 8; v++ {
		got, err := tasks.ParseStatus(v)
		if v >= 1 && v <= 5 {
			require.NoError(t, err, "ParseStatus(%d)", v)
			require.Equal(t, tasks.Status(v), got, "ParseStatus(%d)", v)
			continue
		}
		require.ErrorIs(t, err, tasks.ErrInvalidStatus, "ParseStatus(%d)", v)
		require.Zero(t, got, "ParseStatus(%d)", v)
	}
	// A value that would wrap around int16 must not alias a valid status.
	_, err := tasks.ParseStatus(65536 + 1)
	require.ErrorIs(t, err, tasks.ErrInvalidStatus)
}
