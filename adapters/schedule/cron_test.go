package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/schedule"
)

func TestCronIsEvaluatedInItsZone(t *testing.T) {
	shanghai := time.FixedZone("CST", 8*3600)
	s, err := schedule.Cron("0 2 * * *", shanghai)
	require.NoError(t, err)
	after := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC) // 08:00 in Shanghai
	require.Equal(t, time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC), s.Next(after), "02:00 Shanghai is 18:00 UTC the day before")
	require.Equal(t, time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC), s.Next(s.Next(after)))

	s, err = schedule.Cron("CRON_TZ=UTC */15 * * * *", shanghai)
	require.NoError(t, err)
	require.Equal(t, after.Add(15*time.Minute), s.Next(after))
}

func TestCronRefusesWhatItCannotHonour(t *testing.T) {
	for spec, loc := range map[string]*time.Location{
		"0 2 * *":     time.UTC, // four fields
		"61 * * * *":  time.UTC,
		"@every 1h":   time.UTC,
		"0 2 * * *":   nil,
		"not a cron!": time.UTC,
	} {
		_, err := schedule.Cron(spec, loc)
		var se *schedule.Error
		require.True(t, errors.As(err, &se), "%q: %v", spec, err)
		require.NotEmpty(t, se.Reason)
	}
	require.Panics(t, func() { schedule.MustCron("nope", time.UTC) })
}
