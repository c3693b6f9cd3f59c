package contracttests_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSuitesCatchBrokenAdapters proves the suites can fail: each case runs a
// suite against an adapter with one planted contract break (broken_test.go,
// build tag contractbreak) in a child `go test`, which must fail and name
// the rule that was broken. The child inherits the environment, so the
// Postgres case uses the same TEST_DATABASE_URL as this run.
func TestSuitesCatchBrokenAdapters(t *testing.T) {
	t.Parallel()

	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command must be on PATH")
	outboxRule := "rule: only the lease owner with the current fencing token and an unexpired lease may complete a row"
	for name, rule := range map[string]string{
		"outbox-complete-without-lease":          outboxRule,
		"postgres-outbox-complete-without-lease": outboxRule, // needs TEST_DATABASE_URL or Docker, inherited below
		"tasks-complete-without-lease":           "rule: only the lease holder with the current fencing token may complete a task",
		"cache-stale-refill":                     "rule: a stale refill must never overwrite a newer version",
		"cache-fill-check-then-write":            "concurrent Fill(v1) and Invalidate(min 2) left v1 cached",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(goBin, "test", "-tags", "contractbreak", "-count=1", "-run", "^TestBroken$", ".")
			cmd.Env = append(os.Environ(), "CONTRACTTESTS_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the suite must fail against a broken adapter; output:\n%s", out)
			require.Contains(t, string(out), rule, "the failure must name the rule broken")
		})
	}
}
