package devices_test

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/examples/devices"
)

// maxRowsReader answers devices.upload.max_rows with the value the test
// sets, parsed by the domain's own spec; other keys get their default.
type maxRowsReader struct{ max atomic.Int64 }

func (r *maxRowsReader) Value(_ context.Context, key string) (sysconfig.Value, error) {
	for _, s := range devices.Domain().ConfigSpecs {
		if s.Key != key {
			continue
		}
		text := s.Default
		if key == devices.KeyMaxRows {
			text = strconv.FormatInt(r.max.Load(), 10)
		}
		return s.Parse(text)
	}
	return sysconfig.Value{}, sysconfig.ErrKeyNotRegistered
}

// Regression (issue 43 item 9): the row quota was checked before the
// replay decision, so lowering devices.upload.max_rows turned the retry of
// an accepted upload into 422 instead of its stored 202 and task id.
// A check whose answer can change after acceptance comes after it.
func TestUploadRetryReplaysAfterTheRowQuotaIsLowered(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(devices.MigrationsFS)}).Bun
	svc, err := devices.NewService(db, &fakeClock{now: time.Now().UTC()})
	require.NoError(t, err)
	cfg := &maxRowsReader{}
	cfg.max.Store(10)
	devices.SetConfig(svc, cfg)

	agent := devices.Actor{Subject: "agent-7", Roles: []string{devices.RoleAgent}}
	csv := []byte(csvRows(5))
	cmd := devices.UploadCommand{Key: uploadKey(t, agent.Subject, "upload-quota-0001", csv), FileName: "devices.csv", File: csv}
	first, err := svc.Upload(t.Context(), agent, cmd)
	require.NoError(t, err)
	require.NotEmpty(t, first.TaskID)

	cfg.max.Store(2)
	retry, err := svc.Upload(t.Context(), agent, cmd)
	require.NoError(t, err, "rule: the retry of an accepted upload replays whatever the quota now says")
	require.NotNil(t, retry.Replay)
	require.Equal(t, http.StatusAccepted, retry.Replay.Status)
	require.Equal(t, first.Body, retry.Replay.Body, "rule: the replay is the first answer, with its task id")

	other := devices.UploadCommand{Key: uploadKey(t, agent.Subject, "upload-quota-0002", csv), FileName: "devices.csv", File: csv}
	_, err = svc.Upload(t.Context(), agent, other)
	var tooMany *devices.TooManyRowsError
	require.ErrorAs(t, err, &tooMany, "a new upload over the lowered quota is refused")
	var n int
	require.NoError(t, db.NewRaw("SELECT count(*) FROM ex_devices_task").Scan(t.Context(), &n))
	require.Equal(t, 1, n, "rule: a refused upload stores nothing")
}
