package tasks

import (
	"strconv"
	"time"
)

// MaxPollInterval caps the poll back-off.
const MaxPollInterval = 10 * time.Second

// pollSteps is the polling back-off of the task contract: 2 s, 3 s, 5 s,
// then MaxPollInterval (docs/architecture.md, task status).
var pollSteps = [...]time.Duration{2 * time.Second, 3 * time.Second, 5 * time.Second}

// PollHint returns how long a client should wait before polling a task in
// status again, given how many polls it already made (0 for the first
// read). It returns 2 s, 3 s, 5 s, then 10 s for every later poll, and
// (0, false) once the task is terminal (or the status is invalid): stop
// polling.
func PollHint(status Status, pollsSoFar int) (time.Duration, bool) {
	if !status.Valid() || status.Terminal() {
		return 0, false
	}
	if i := max(pollsSoFar, 0); i < len(pollSteps) {
		return pollSteps[i], true
	}
	return MaxPollInterval, true
}

// RetryAfterSeconds formats d as a Retry-After header value: whole seconds,
// rounded up, at least 1.
func RetryAfterSeconds(d time.Duration) string {
	secs := max(int64((d+time.Second-1)/time.Second), 1)
	return strconv.FormatInt(secs, 10)
}
