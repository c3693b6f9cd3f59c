package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/relay"
)

var (
	faultBinOnce sync.Once
	faultBin     string
	faultBinErr  error
)

// faultRelay builds, once, the relay with the e2efault consumer
// (fault_e2e.go): an "e2e.fault" event with {"crash":true} ends the process.
func faultRelay(t *testing.T) string {
	t.Helper()
	faultBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "relay-fault-")
		if err != nil {
			faultBinErr = err
			return
		}
		faultBin = filepath.Join(dir, "relay")
		out, err := exec.Command("go", "build", "-tags", buildTags+",e2efault", "-o", faultBin, ".").CombinedOutput()
		if err != nil {
			faultBinErr = fmt.Errorf("go build -tags %s,e2efault: %w\n%s", buildTags, err, out)
		}
	})
	require.NoError(t, faultBinErr)
	return faultBin
}

// A CONSUMER THAT CRASHES ITS PROCESS on one event: the relay's worker
// dies on every attempt at it. The test restarts the relay each time, as
// a deployment would. After WORKER_MAX_RETRY+1 attempts the queue archives
// the task; the reconciler finds it archived with no consumer result and
// records CONSUMER_ABANDONED (OutboxConsumerAbandoned pages); every other
// event is consumed. Each attempt waits for Asynq's lease (30 s) and its
// recovery sweep (at most 1 min), so this runs about two minutes.
func TestE2EConsumerCrashEndsAbandoned(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	bin := faultRelay(t)
	w := newWorld(t, "")
	const others = 20
	crash := uuid.NewString()
	commit := func(ids ...string) {
		var evs []outbox.Event
		for _, id := range ids {
			ev, err := outbox.New(outbox.NewParams{EventID: id, EventType: "e2e.fault", PayloadVersion: 1,
				AggregateType: "fault", AggregateID: id, ResourceType: "fault", ResourceID: id,
				RequestID: "req-fault", CorrelationID: "corr-fault", Payload: map[string]bool{"crash": id == crash}, Now: time.Now()})
			require.NoError(t, err)
			evs = append(evs, ev)
		}
		require.NoError(t, w.db.Bun.RunInTx(t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
			return pgoutbox.Append(ctx, tx, evs...)
		}))
	}
	consumedOthers := `SELECT count(DISTINCT c.event_id) FROM tb_outbox_consumption c JOIN tb_outbox_event e USING (event_id)
		WHERE e.event_type = 'e2e.fault' AND e.event_id <> ?::uuid`
	var before []string
	for range others {
		before = append(before, uuid.NewString())
	}
	env := append([]string{"WORKER_ENABLED=true", "WORKER_CONCURRENCY=1", "WORKER_MAX_RETRY=1",
		"WORKER_RETRY_BASE=100ms", "WORKER_RETRY_MAX=200ms"}, lossEnv...)
	var (
		procs    []*relayProc
		restarts int
	)
	// The others first, consumed and recorded before the crashing event
	// exists: a task that finishes in the instant before its worker dies
	// may lose its acknowledgement and its record with the process, and
	// be run again (see docs/operations.md); this test is about the event
	// that kills its worker.
	commit(before...)
	procs = append(procs, w.spawnBin(bin, "relay-0", w.redisURL, env...))
	w.waitCountProgress(others, consumedOthers, crash)
	commit(crash)
	abandoned := func() int {
		return w.count(`SELECT count(*) FROM tb_outbox_consumer_failure WHERE event_id = ?::uuid AND error_code = ? AND resolved_at IS NULL`,
			crash, relay.CodeConsumerAbandoned)
	}
	start := time.Now()
	// Each attempt needs Asynq's 30 s lease, its 30 s grace and up to a
	// 1 min sweep: fail only when no worker crashed for 4 minutes.
	waitProgress(t, "the crashing event recorded abandoned", 4*time.Minute, false, func() (int, bool, string) {
		if last := procs[len(procs)-1]; last.exited() {
			var ee *exec.ExitError
			if errors.As(last.err, &ee) && ee.ExitCode() == 3 { // the fault consumer's exit, not a taken port
				restarts++
			}
			procs = append(procs, w.spawnBin(bin, fmt.Sprintf("relay-%d", len(procs)), w.redisURL, env...))
		}
		return restarts, abandoned() > 0, fmt.Sprintf("%d worker crashes", restarts)
	})
	t.Logf("the crashing event was recorded %s after %s and %d worker crashes", relay.CodeConsumerAbandoned, time.Since(start).Round(time.Second), restarts)
	require.Equal(t, 2, restarts, "the worker died once per attempt: WORKER_MAX_RETRY=1 is two attempts")
	require.Equal(t, others, w.count(consumedOthers, crash), "the others stay consumed")
	require.Equal(t, 1, w.count(`SELECT count(*) FROM tb_outbox_consumer_failure WHERE resolved_at IS NULL`), "only the crashing event failed")
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_consumption WHERE event_id = ?::uuid`, crash), "the crashing event never counted as consumed")
	last := procs[len(procs)-1]
	last.waitHealthy()
	require.Positive(t, last.metric("outbox_consumer_abandoned_total"), "the abandoned event is in the metric the alert reads")
}
