package devices_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
	"github.com/july/template/examples/devices"
)

// The use cases run without HTTP: a CLI or this test calls Service the way
// the handlers do, against a real Postgres. The upload commits the task,
// its event and its stored answer together; a retry with the same key
// gets that answer back; the reads and the cancel see only the actor's
// own tasks.
func TestServiceRunsWithoutHTTP(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(devices.MigrationsFS)}).Bun
	clock := &fakeClock{now: time.Now().UTC()}
	svc, err := devices.NewService(db, clock)
	require.NoError(t, err)

	owner := devices.Actor{Subject: "ops-cli", Roles: []string{devices.RoleAdmin}}         // may name any target
	stranger := devices.Actor{Subject: "someone-else", Roles: []string{devices.RoleAgent}} // sees its own tasks only
	csv := []byte("device_sn,target_agent_id\nSV00000001,agent-1\nbad,agent-2\n")
	cmd := devices.UploadCommand{Key: uploadKey(t, owner.Subject, "cli-upload-0001", csv), FileName: "devices.csv", File: csv, RequestID: "cli-upload-0001"}

	first, err := svc.Upload(t.Context(), owner, cmd)
	require.NoError(t, err)
	require.Nil(t, first.Replay)
	require.NotEmpty(t, first.TaskID)
	require.JSONEq(t, `{"task_id":"`+first.TaskID+`"}`, string(first.Body))
	var requestID string
	require.NoError(t, db.NewSelect().TableExpr("tb_outbox_event").Column("request_id").
		Where("aggregate_id = ? AND event_type = ?", first.TaskID, devices.EventAssignmentRequested).Scan(t.Context(), &requestID))
	require.Equal(t, "cli-upload-0001", requestID, "the event carries the command's request id")

	again, err := svc.Upload(t.Context(), owner, cmd)
	require.NoError(t, err)
	require.NotNil(t, again.Replay, "rule: a retry with the same key replays")
	require.Equal(t, http.StatusAccepted, again.Replay.Status)
	require.Equal(t, string(first.Body), string(again.Replay.Body))

	got, err := svc.Task(t.Context(), owner, first.TaskID)
	require.NoError(t, err)
	require.Equal(t, tasks.Pending, got.Status)
	_, err = svc.Task(t.Context(), stranger, first.TaskID)
	require.ErrorIs(t, err, devices.ErrTaskNotFound, "rule: another caller's task is not found")
	_, err = svc.Cancel(t.Context(), stranger, first.TaskID)
	require.ErrorIs(t, err, devices.ErrTaskNotFound, "rule: nor can it be cancelled")

	w, err := devices.NewWorker(db, clock, devices.WorkerConfig{Owner: "w", ChunkSize: 2, LeaseFor: 30 * time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Process(t.Context(), first.TaskID))
	items, total, err := svc.Failures(t.Context(), owner, first.TaskID, 0, 10)
	require.NoError(t, err)
	require.EqualValues(t, 1, total)
	require.Equal(t, []devices.FailureItem{{RowNo: 3, DeviceSN: "bad", Code: devices.CodeSNMalformed, Message: items[0].Message}}, items)
	_, err = svc.Cancel(t.Context(), owner, first.TaskID)
	require.ErrorIs(t, err, devices.ErrNotCancellable, "rule: a finished task cannot be cancelled")

	second, err := svc.Upload(t.Context(), owner, devices.UploadCommand{Key: uploadKey(t, owner.Subject, "cli-upload-0002", csv), FileName: "devices.csv", File: csv})
	require.NoError(t, err)
	for range 2 { // the second cancel is a retry: the same answer
		c, err := svc.Cancel(t.Context(), owner, second.TaskID)
		require.NoError(t, err)
		require.Equal(t, tasks.Cancelled, c.Status)
	}

	_, err = svc.Upload(t.Context(), devices.Actor{}, cmd)
	require.Error(t, err, "a use case needs its actor")
	_, err = svc.Upload(t.Context(), devices.Actor{Subject: "no-role"}, cmd)
	require.ErrorIs(t, err, devices.ErrForbidden, "rule: an upload needs the agent or the admin role")
	_, err = svc.Task(t.Context(), devices.Actor{Subject: owner.Subject}, first.TaskID)
	require.ErrorIs(t, err, devices.ErrForbidden, "rule: without a role, not even the own task")
}

// uploadKey is an idempotency key for an upload of file by principal.
func uploadKey(t *testing.T, principal, requestID string, file []byte) ports.IdempotencyKey {
	t.Helper()
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	require.NoError(t, err)
	sum, err := fp.FromValue(map[string]any{"file": string(file)})
	require.NoError(t, err)
	return ports.IdempotencyKey{
		Scope:     idempotency.Scope{Principal: principal, Operation: devices.OperationAssign},
		RequestID: requestID, Fingerprint: sum,
	}
}
