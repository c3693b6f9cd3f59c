package tasks

import "fmt"

// Counts are a task's result counters. Total is the number of business items;
// Success and Failed count items already decided. Skipped items, where a
// business has them, must be classified as one of the two by that business.
type Counts struct {
	Total   int64
	Success int64
	Failed  int64
}

// CountsError is returned when counters break the task invariants.
type CountsError struct {
	Counts Counts
	// Reason says which rule failed.
	Reason string
}

// Error implements error.
func (e *CountsError) Error() string {
	return fmt.Sprintf("invalid task counts (total=%d success=%d failed=%d): %s",
		e.Counts.Total, e.Counts.Success, e.Counts.Failed, e.Reason)
}

// Validate checks the counters. All are non-negative and Success+Failed never
// exceeds Total. With complete set (the task is Completed) Success+Failed
// must equal Total: the terminal-count invariant. Failed and Cancelled tasks
// stopped early, so pass false for them.
func (c Counts) Validate(complete bool) error {
	switch {
	case c.Total < 0 || c.Success < 0 || c.Failed < 0:
		return &CountsError{Counts: c, Reason: "counts must not be negative"}
	case c.Success > c.Total || c.Failed > c.Total-c.Success:
		return &CountsError{Counts: c, Reason: "success+failed exceeds total; record at most total items"}
	case complete && c.Success+c.Failed != c.Total:
		return &CountsError{Counts: c, Reason: "success+failed must equal total when completed; record every item before completing"}
	}
	return nil
}

// Done returns the number of decided items, Success+Failed.
func (c Counts) Done() int64 { return c.Success + c.Failed }

// Add returns c with success and failed more items decided. It refuses
// negative increments and any result where Success+Failed exceeds Total, and
// then returns c unchanged.
func (c Counts) Add(success, failed int64) (Counts, error) {
	if success < 0 || failed < 0 {
		return c, &CountsError{Counts: c, Reason: fmt.Sprintf("increment (success=%d failed=%d) must not be negative", success, failed)}
	}
	if err := c.Validate(false); err != nil {
		return c, err
	}
	if left := c.Total - c.Done(); success > left || failed > left-success {
		return c, &CountsError{Counts: c, Reason: fmt.Sprintf("adding success=%d failed=%d exceeds total; only %d items are left", success, failed, left)}
	}
	c.Success += success
	c.Failed += failed
	return c, nil
}

// Progress returns the integer percentage 0..100 for a task in status s.
// It is floored and capped at 99 while the task is not terminal, so 100
// always means finished. A Completed task is 100 even with Total == 0; any
// other task with Total == 0 is 0. Failed and Cancelled tasks report how far
// they got.
func (c Counts) Progress(s Status) int {
	if s == Completed {
		return 100
	}
	if c.Total <= 0 || c.Done() <= 0 {
		return 0
	}
	done := min(c.Done(), c.Total)
	// Integer math so 2/3 is 66 on every platform; item counts stay far
	// below the 9e16 where done*100 would overflow.
	pct := int(done * 100 / c.Total)
	if !s.Terminal() {
		pct = min(pct, 99)
	}
	return pct
}
