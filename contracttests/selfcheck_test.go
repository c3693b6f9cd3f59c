package contracttests_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSuitesCatchBrokenAdapters proves the suites can fail: each case runs a
// suite against an adapter with one planted contract break (broken_test.go,
// build tag contractbreak) in a child `go test`, which must fail and name
// the rule that was broken. The child inherits the environment, so the
// Postgres case uses the same TEST_DATABASE_URL as this run.
// failPrefix starts the line go test prints for a failed case of TestBroken.
const failPrefix = "--- FAIL: TestBroken/"

func TestSuitesCatchBrokenAdapters(t *testing.T) {
	t.Parallel()

	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command must be on PATH")
	outboxRule := "rule: only the lease owner with the current fencing token and an unexpired lease may complete a row"
	// Each break names what its run must print: the rule broken and, for
	// the concurrency and outage breaks, the failing case itself. Such a
	// child runs only that case, which shows that case catches the break
	// (not only an older sequential one) and spares it creating a database
	// for every other case of the suite.
	for name, want := range map[string][]string{
		"outbox-complete-without-lease":          {outboxRule},
		"postgres-outbox-complete-without-lease": {outboxRule}, // needs TEST_DATABASE_URL or Docker, inherited below
		"tasks-complete-without-lease":           {"rule: only the lease holder with the current fencing token may complete a task"},
		"cache-stale-refill":                     {"rule: a stale refill must never overwrite a newer version"},
		"cache-fill-check-then-write": {
			failPrefix + "Concurrent/FillVsInvalidateNeverLeavesStale",
			"concurrent Fill(v1) and Invalidate(min 2) left v1 cached",
		},
		"redis-guard-release-get-then-del": { // needs TEST_REDIS_URL or Docker
			failPrefix + "Concurrent/ReleaseVsAcquireNeverFreesAnotherOwnersHold",
			"rule: of two concurrent releases by the owner exactly one frees the guard",
		},
		"postgres-outbox-claim-without-lock": {
			failPrefix + "Concurrent/ClaimersNeverShareARow",
			"rule: two callers never hold the same row at once",
		},
		"postgres-outbox-finish-check-then-write": {
			failPrefix + "Concurrent/StaleFinishAfterReclaimIsRefused",
			"after a re-claim is refused: the fencing token of the claim decides",
		},
		"postgres-outbox-recover-keeps-retry-count": {
			failPrefix + "RecoverExpired/RepeatedExpiryEndsFailed",
			"rule: each recovery counts a delivery attempt (retry_count+1)",
		},
		"outbox-complete-ignores-token": {
			failPrefix + "Concurrent/StaleFinishAfterReclaimIsRefused",
			"rule: a stale lease holder's Complete after a re-claim is refused",
		},
		"postgres-tasks-finish-check-then-write": {
			failPrefix + "Concurrent/StaleFinishAfterTakeoverIsRefused",
			"after a takeover is refused: the fencing token of the claim decides",
		},
		"periodic-append-without-existing-check": {
			failPrefix + "Advance/AnEventAlreadyStoredIsAbsorbed",
			"rule: a duplicate event_id never aborts the pass",
		},
		"guard-outage-wrong-error-and-hang": {
			failPrefix + "Outage/EveryMethodUnavailableAndNothingChanges",
			"Acquire under outage: returned \"guard store: connection refused\", which does not wrap ports.ErrUnavailable",
			"Release under outage: did not return within 10s (it hangs)",
			"2 of 3 methods broke the outage rule: Acquire, Release",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := "^TestBroken$"
			if c, ok := strings.CutPrefix(want[0], failPrefix); ok {
				run += "/^" + strings.ReplaceAll(regexp.QuoteMeta(c), "/", "$/^") + "$"
			}
			cmd := exec.Command(goBin, "test", "-tags", "contractbreak", "-count=1", "-run", run, ".")
			cmd.Env = append(os.Environ(), "CONTRACTTESTS_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the suite must fail against a broken adapter; output:\n%s", out)
			for _, w := range want {
				require.Contains(t, string(out), w, "the failure must name the case and the rule broken")
			}
		})
	}
}
