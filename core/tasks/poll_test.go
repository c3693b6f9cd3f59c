package tasks_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/tasks"
)

func TestPollHint(t *testing.T) {
	t.Parallel()

	t.Run("Sequence", func(t *testing.T) {
		t.Parallel()

		want := []time.Duration{2 * time.Second, 3 * time.Second, 5 * time.Second, 10 * time.Second, 10 * time.Second}
		for _, s := range []tasks.Status{tasks.Pending, tasks.Processing} {
			for polls, w := range want {
				got, ok := tasks.PollHint(s, polls)
				require.True(t, ok, "PollHint(%s, %d)", s, polls)
				require.Equal(t, w, got, "PollHint(%s, %d)", s, polls)
			}
		}
	})

	t.Run("Cap", func(t *testing.T) {
		t.Parallel()

		for _, polls := range []int{3, 4, 10, 1000, int(^uint(0) >> 1)} {
			got, ok := tasks.PollHint(tasks.Processing, polls)
			require.True(t, ok, "PollHint(processing, %d)", polls)
			require.Equal(t, tasks.MaxPollInterval, got, "PollHint(processing, %d)", polls)
			require.LessOrEqual(t, got, 10*time.Second)
		}
	})

	t.Run("NegativeIsFirst", func(t *testing.T) {
		t.Parallel()

		got, ok := tasks.PollHint(tasks.Pending, -3)
		require.True(t, ok)
		require.Equal(t, 2*time.Second, got)
	})

	t.Run("StopsWhenTerminalOrInvalid", func(t *testing.T) {
		t.Parallel()

		for _, s := range []tasks.Status{tasks.Completed, tasks.Failed, tasks.Cancelled, 0, 9} {
			for _, polls := range []int{0, 1, 5} {
				got, ok := tasks.PollHint(s, polls)
				require.False(t, ok, "PollHint(%s, %d)", s, polls)
				require.Zero(t, got, "PollHint(%s, %d)", s, polls)
			}
		}
	})
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   time.Duration
		want string
	}{
		{2 * time.Second, "2"},
		{10 * time.Second, "10"},
		{1500 * time.Millisecond, "2"},
		{time.Nanosecond, "1"},
		{0, "1"},
		{-time.Second, "1"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tasks.RetryAfterSeconds(tt.in), "RetryAfterSeconds(%s)", tt.in)
	}
}
