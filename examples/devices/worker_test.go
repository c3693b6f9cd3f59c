package devices_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/tasks"
	"github.com/july/template/examples/devices"
)

var errCrash = errors.New("simulated crash")

// takeoverCSV has 9 rows: 6 valid, 3 failing, spread over the chunks of 2.
func takeoverCSV(prefix string) (csv string, valid, invalid int) {
	var b strings.Builder
	b.WriteString("device_sn,target_agent_id\n")
	for i := range 9 {
		switch i % 3 {
		case 1:
			fmt.Fprintf(&b, ",agent-%d\n", i) // empty serial
			invalid++
		default:
			fmt.Fprintf(&b, "%s%08d,agent-%d\n", prefix, i, i)
			valid++
		}
	}
	return b.String(), valid, invalid
}

// requireExactlyOnce checks the facts: every valid row applied once, every
// failure recorded once, and the counts equal to the facts.
func requireExactlyOnce(t *testing.T, v *env, id string, valid, invalid int) tasks.View {
	t.Helper()
	got := v.getTask(t, "user-1", id)
	require.Equal(t, tasks.Completed, got.Status)
	require.EqualValues(t, valid+invalid, got.TotalCount)
	require.Equal(t, got.TotalCount, got.SuccessCount+got.FailedCount)
	require.EqualValues(t, valid, got.SuccessCount)
	require.EqualValues(t, invalid, got.FailedCount)
	require.Equal(t, valid, v.count(t, "SELECT count(*) FROM ex_devices_assignment WHERE task_id = ?", id))
	require.Equal(t, invalid, v.count(t, "SELECT count(*) FROM ex_devices_failure WHERE task_id = ?", id))
	require.Equal(t, invalid, v.count(t, "SELECT count(DISTINCT row_no) FROM ex_devices_failure WHERE task_id = ?", id))
	return got
}

// A worker dies after two chunks; its lease expires and another worker
// takes over and resumes at the first undecided row.
func TestWorkerCrashIsTakenOverAndResumed(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	csv, valid, invalid := takeoverCSV("TK")
	_, id := v.upload(t, "user-1", "upload-takeover-01", csv)

	a := v.worker(t, "worker-a")
	devices.SetAfterChunk(a, func(done int64) error {
		if done >= 4 {
			return errCrash
		}
		return nil
	})
	require.ErrorIs(t, a.Process(t.Context(), id), errCrash)

	mid := v.getTask(t, "user-1", id)
	require.Equal(t, tasks.Processing, mid.Status)
	require.EqualValues(t, 9, mid.TotalCount)
	require.EqualValues(t, 4, mid.SuccessCount+mid.FailedCount, "rule: two committed chunks")
	require.Equal(t, 4, v.count(t, "SELECT (SELECT count(*) FROM ex_devices_assignment WHERE task_id = ?) + (SELECT count(*) FROM ex_devices_failure WHERE task_id = ?)", id, id),
		"rule: facts match the counts at every commit")

	b := v.worker(t, "worker-b")
	err := b.Process(t.Context(), id)
	require.ErrorIs(t, err, lease.ErrHeld, "rule: a live lease is not taken over; the delivery is retried")

	v.clock.Advance(31 * time.Second)
	require.NoError(t, b.Process(t.Context(), id))
	requireExactlyOnce(t, v, id, valid, invalid)
}

// A stalled worker (not dead) loses its lease to a takeover that finishes
// the task; when it wakes up its next chunk is refused and it writes
// nothing.
func TestStalledWorkerWritesNothingAfterTakeover(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	csv, valid, invalid := takeoverCSV("ST")
	_, id := v.upload(t, "user-1", "upload-stalled-01", csv)

	b := v.worker(t, "worker-b")
	a := v.worker(t, "worker-a")
	var bErr error
	devices.SetAfterChunk(a, func(done int64) error {
		if done == 2 { // stall: the lease runs out and B does the whole task
			v.clock.Advance(31 * time.Second)
			bErr = b.Process(t.Context(), id)
		}
		return nil
	})
	require.NoError(t, a.Process(t.Context(), id), "rule: finding the task finished by another run is acknowledged")
	require.NoError(t, bErr)
	requireExactlyOnce(t, v, id, valid, invalid)
}

// Cancelling while a worker runs stops it at its next chunk; what was
// applied stays, and the task keeps the cancelled state.
func TestCancelStopsARunningWorker(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	csv, _, _ := takeoverCSV("CX")
	_, id := v.upload(t, "user-1", "upload-cancel-run-01", csv)

	w := v.worker(t, "worker")
	devices.SetAfterChunk(w, func(done int64) error {
		if done == 2 {
			r := v.do(t, http.MethodPost, "/api/v1/device-assignments/"+id+"/cancel", "user-1", nil)
			require.Equal(t, http.StatusOK, r.Status, "body %s", r.Body)
		}
		return nil
	})
	require.NoError(t, w.Process(t.Context(), id))

	got := v.getTask(t, "user-1", id)
	require.Equal(t, tasks.Cancelled, got.Status)
	require.EqualValues(t, 2, got.SuccessCount+got.FailedCount, "rule: the worker stopped after the cancel")
	require.Equal(t, 2, v.count(t, "SELECT (SELECT count(*) FROM ex_devices_assignment WHERE task_id = ?) + (SELECT count(*) FROM ex_devices_failure WHERE task_id = ?)", id, id))
}

// A duplicate delivery of a finished task is acknowledged and changes
// nothing.
func TestDuplicateDeliveryOfFinishedTaskChangesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	_, id := v.upload(t, "user-1", "upload-dup-deliv-01", partialCSV)
	require.NoError(t, v.worker(t, "first").Process(t.Context(), id))
	before := v.getTask(t, "user-1", id)
	failures := v.count(t, "SELECT count(*) FROM ex_devices_failure WHERE task_id = ?", id)

	v.clock.Advance(time.Minute)
	for range 3 {
		require.NoError(t, v.worker(t, "again").Process(t.Context(), id))
	}
	after := v.getTask(t, "user-1", id)
	require.Equal(t, before, after, "rule: counts, status and times are unchanged")
	require.Equal(t, failures, v.count(t, "SELECT count(*) FROM ex_devices_failure WHERE task_id = ?", id))

	err := v.worker(t, "x").Process(t.Context(), "00000000-0000-4000-8000-000000000000")
	require.Error(t, err)
	require.Equal(t, outbox.ClassPermanent, outbox.Classify(err), "rule: an unknown task is a permanent error, not retried")
}
