package schedule_test

import (
	"errors"
	"testing"
	"time"
	_ "time/tzdata" // the DST case needs America/New_York on any machine

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

// Daylight saving time, in a zone that has it (New York, 2026): a job in
// the hour the clocks skip still runs that day, and a job
// in the hour the clocks repeat runs once, at its first reading.
func TestCronAcrossDaylightSaving(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)

	// Spring forward: 2026-03-08 02:00 EST becomes 03:00 EDT; 02:30 never reads.
	s := schedule.MustCron("30 2 * * *", ny)
	after := time.Date(2026, 3, 8, 0, 0, 0, 0, ny)
	// go-cron moves the missing 02:30 forward by the hour skipped (as Go's
	// time.Date normalises it); robfig/cron/v3 skipped the day.
	require.Equal(t, time.Date(2026, 3, 8, 3, 30, 0, 0, ny).UTC(), s.Next(after),
		"the 02:30 job runs at 03:30 EDT on the spring-forward day, not a day later")
	require.Equal(t, time.Date(2026, 3, 9, 2, 30, 0, 0, ny).UTC(), s.Next(s.Next(after)))

	// Fall back: 2026-11-01 02:00 EDT becomes 01:00 EST; 01:30 reads twice.
	s = schedule.MustCron("30 1 * * *", ny)
	from, to := time.Date(2026, 10, 31, 12, 0, 0, 0, ny), time.Date(2026, 11, 2, 12, 0, 0, 0, ny)
	var got []time.Time
	for at := s.Next(from); at.Before(to); at = s.Next(at) {
		got = append(got, at)
	}
	require.Equal(t, []time.Time{
		time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT
		time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC), // 01:30 EST the next day
	}, got, "the 01:30 job runs once on the fall-back night (at the first 01:30), not twice")
}
