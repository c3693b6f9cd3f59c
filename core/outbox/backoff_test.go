package outbox_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
)

func TestBackoffCeiling(t *testing.T) {
	t.Parallel()

	b := outbox.Backoff{Base: time.Second, Max: 10 * time.Minute}
	tests := []struct {
		attempt int
		want    time.Duration
	}{
		{math.MinInt, time.Second}, {-1, time.Second}, {0, time.Second}, {1, time.Second},
		{2, 2 * time.Second}, {3, 4 * time.Second}, {10, 512 * time.Second},
		{11, 10 * time.Minute}, {64, 10 * time.Minute}, {1000, 10 * time.Minute}, {math.MaxInt, 10 * time.Minute},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, b.Ceiling(tt.attempt), "attempt %d", tt.attempt)
	}
}

func TestBackoffDelayBounds(t *testing.T) {
	t.Parallel()

	backoffs := []outbox.Backoff{
		outbox.DefaultBackoff,
		{Base: 100 * time.Millisecond, Max: 3 * time.Second},
		{Base: 3, Max: 7}, // odd nanoseconds: the floor rounds up
		{Base: time.Hour, Max: time.Duration(math.MaxInt64)},
		{Base: 1, Max: time.Duration(math.MaxInt64)},
	}
	rnds := []float64{0, 1e-9, 0.25, 0.5, 0.75, math.Nextafter(1, 0)}
	attempts := []int{-5, 0, 1, 2, 3, 5, 10, 30, 62, 63, 64, 100, math.MaxInt}
	for _, b := range backoffs {
		for _, n := range attempts {
			c := b.Ceiling(n)
			lo, hi := c-c/2, c
			require.LessOrEqual(t, c, b.Max, "backoff %+v attempt %d", b, n)
			require.Positive(t, lo, "backoff %+v attempt %d", b, n)
			prev := time.Duration(-1)
			for _, r := range rnds {
				d := b.Delay(n, r)
				require.GreaterOrEqual(t, d, lo, "backoff %+v attempt %d rnd %v", b, n, r)
				require.LessOrEqual(t, d, hi, "backoff %+v attempt %d rnd %v", b, n, r)
				require.GreaterOrEqual(t, d, prev, "delay must grow with rnd: backoff %+v attempt %d rnd %v", b, n, r)
				prev = d
			}
			require.Equal(t, lo, b.Delay(n, 0), "rnd 0 gives the floor: backoff %+v attempt %d", b, n)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()

	b := outbox.Backoff{Base: time.Second, Max: 10 * time.Minute}
	tests := []struct {
		name    string
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{"FirstFloor", 1, 0, 500 * time.Millisecond},
		{"FirstMid", 1, 0.5, 750 * time.Millisecond},
		{"ThirdFloor", 3, 0, 2 * time.Second},
		{"CappedFloor", 20, 0, 5 * time.Minute},
		{"CappedTop", 20, 1, 10 * time.Minute},
		{"NegativeRndClamped", 1, -3, 500 * time.Millisecond},
		{"NaNRndClamped", 1, math.NaN(), 500 * time.Millisecond},
		{"LargeRndClamped", 1, 7, time.Second},
		{"InfRndClamped", 1, math.Inf(1), time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, b.Delay(tt.attempt, tt.rnd), "attempt %d rnd %v", tt.attempt, tt.rnd)
		})
	}
}

func TestBackoffDefaults(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		b        outbox.Backoff
		base, mx time.Duration
	}{
		{"Zero", outbox.Backoff{}, time.Second, 10 * time.Minute},
		{"Negative", outbox.Backoff{Base: -1, Max: -1}, time.Second, 10 * time.Minute},
		{"MaxBelowBase", outbox.Backoff{Base: time.Minute, Max: time.Second}, time.Minute, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.base, tt.b.Ceiling(1), "backoff %+v", tt.b)
			require.Equal(t, tt.mx, tt.b.Ceiling(math.MaxInt), "backoff %+v", tt.b)
		})
	}
}
