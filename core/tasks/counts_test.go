package tasks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/tasks"
)

func TestCountsValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		counts   tasks.Counts
		complete bool
		wantErr  bool
	}{
		{"ZeroRunning", tasks.Counts{}, false, false},
		{"ZeroComplete", tasks.Counts{}, true, false},
		{"PartialRunning", tasks.Counts{Total: 10, Success: 3, Failed: 2}, false, false},
		{"PartialComplete", tasks.Counts{Total: 10, Success: 3, Failed: 2}, true, true},
		{"AllDecidedComplete", tasks.Counts{Total: 10, Success: 7, Failed: 3}, true, false},
		{"AllFailedComplete", tasks.Counts{Total: 10, Failed: 10}, true, false},
		{"OverRunning", tasks.Counts{Total: 10, Success: 8, Failed: 3}, false, true},
		{"OverComplete", tasks.Counts{Total: 10, Success: 8, Failed: 3}, true, true},
		{"NegativeTotal", tasks.Counts{Total: -1}, false, true},
		{"NegativeSuccess", tasks.Counts{Total: 1, Success: -1}, false, true},
		{"NegativeFailed", tasks.Counts{Total: 1, Failed: -1, Success: 2}, false, true},
		{"OverflowSum", tasks.Counts{Total: 10, Success: 9223372036854775807, Failed: 9223372036854775807}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := tt.counts.Validate(tt.complete)
			if !tt.wantErr {
				require.NoError(t, err, "%+v.Validate(%t)", tt.counts, tt.complete)
				return
			}
			var ce *tasks.CountsError
			require.ErrorAs(t, err, &ce, "%+v.Validate(%t)", tt.counts, tt.complete)
			require.Equal(t, tt.counts, ce.Counts)
		})
	}
}

func TestCountsAdd(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name            string
		start           tasks.Counts
		success, failed int64
		want            tasks.Counts
		wantErr         bool
	}{
		{"One", tasks.Counts{Total: 3}, 1, 0, tasks.Counts{Total: 3, Success: 1}, false},
		{"Both", tasks.Counts{Total: 3, Success: 1}, 1, 1, tasks.Counts{Total: 3, Success: 2, Failed: 1}, false},
		{"Nothing", tasks.Counts{Total: 3}, 0, 0, tasks.Counts{Total: 3}, false},
		{"ExactlyToTotal", tasks.Counts{Total: 3, Failed: 1}, 2, 0, tasks.Counts{Total: 3, Success: 2, Failed: 1}, false},
		{"PastTotal", tasks.Counts{Total: 3, Success: 2}, 1, 1, tasks.Counts{Total: 3, Success: 2}, true},
		{"ZeroTotal", tasks.Counts{}, 1, 0, tasks.Counts{}, true},
		{"NegativeSuccess", tasks.Counts{Total: 3, Success: 2}, -1, 0, tasks.Counts{Total: 3, Success: 2}, true},
		{"NegativeFailed", tasks.Counts{Total: 3}, 0, -1, tasks.Counts{Total: 3}, true},
		{"HugeIncrement", tasks.Counts{Total: 3}, 9223372036854775807, 9223372036854775807, tasks.Counts{Total: 3}, true},
		{"BrokenStart", tasks.Counts{Total: 1, Success: 2}, 0, 0, tasks.Counts{Total: 1, Success: 2}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := tt.start.Add(tt.success, tt.failed)
			if tt.wantErr {
				var ce *tasks.CountsError
				require.ErrorAs(t, err, &ce, "%+v.Add(%d, %d)", tt.start, tt.success, tt.failed)
			} else {
				require.NoError(t, err, "%+v.Add(%d, %d)", tt.start, tt.success, tt.failed)
			}
			require.Equal(t, tt.want, got, "%+v.Add(%d, %d)", tt.start, tt.success, tt.failed)
		})
	}
}

func TestCountsProgress(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		counts tasks.Counts
		status tasks.Status
		want   int
	}{
		{"ZeroTotalPending", tasks.Counts{}, tasks.Pending, 0},
		{"ZeroTotalProcessing", tasks.Counts{}, tasks.Processing, 0},
		{"ZeroTotalCompleted", tasks.Counts{}, tasks.Completed, 100},
		{"ZeroTotalFailed", tasks.Counts{}, tasks.Failed, 0},
		{"ZeroTotalCancelled", tasks.Counts{}, tasks.Cancelled, 0},
		{"NothingDone", tasks.Counts{Total: 10}, tasks.Processing, 0},
		{"Half", tasks.Counts{Total: 10, Success: 3, Failed: 2}, tasks.Processing, 50},
		{"Floors", tasks.Counts{Total: 3, Success: 2}, tasks.Processing, 66},
		{"AllDoneStillRunningCapsAt99", tasks.Counts{Total: 4, Success: 4}, tasks.Processing, 99},
		{"RecoveredPendingKeepsProgress", tasks.Counts{Total: 4, Failed: 1}, tasks.Pending, 25},
		{"Completed", tasks.Counts{Total: 4, Success: 1, Failed: 3}, tasks.Completed, 100},
		{"FailedMidway", tasks.Counts{Total: 4, Success: 1}, tasks.Failed, 25},
		{"CancelledMidway", tasks.Counts{Total: 8, Success: 6}, tasks.Cancelled, 75},
		{"LargeTotal", tasks.Counts{Total: 1_000_000_000_000, Success: 999_999_999_999}, tasks.Failed, 99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, tt.counts.Progress(tt.status), "%+v.Progress(%s)", tt.counts, tt.status)
		})
	}
}
