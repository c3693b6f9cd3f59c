package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRetentionRefusesWindowShorterThanRetrySpan: retention deletes the
// consumption records consumers use as their idempotency key. A window
// shorter than a task's retry span (issue 43, item 4: 1 h beside the
// default 25 retries of up to 30 min each) let an attempt that committed
// and then errored run again after its record was gone: twice applied.
func TestRetentionRefusesWindowShorterThanRetrySpan(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) error {
		env["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/postgres"
		env["REDIS_URL"] = "redis://127.0.0.1:6379/0"
		_, err := loadConfig(func(k string) string { return env[k] })
		return err
	}
	err := load(map[string]string{"OUTBOX_RETENTION": "1h"})
	require.Error(t, err, "1h beside the default retries must be refused")
	for _, want := range []string{"OUTBOX_RETENTION", "WORKER_MAX_RETRY", "13h21m"} {
		require.Contains(t, err.Error(), want)
	}
	require.Error(t, load(map[string]string{"OUTBOX_RETENTION": "13h"}), "13h is still shorter than the default span")
	require.NoError(t, load(map[string]string{"OUTBOX_RETENTION": "14h"}))
	require.NoError(t, load(map[string]string{"OUTBOX_RETENTION": "2h", "WORKER_MAX_RETRY": "1"}), "one retry: two attempts of 30 min and one wait")
	require.Error(t, load(map[string]string{"OUTBOX_RETENTION": "2h", "WORKER_MAX_RETRY": "1", "WORKER_RETRY_MAX": "24h", "WORKER_RETRY_BASE": "1h"}))
	require.NoError(t, load(map[string]string{}), "retention off: nothing to check")
}
