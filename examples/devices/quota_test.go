package devices_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/core/tasks"
	"github.com/july/template/examples/devices"
)

// rfc2231Upload is a multipart upload whose file name is sent the RFC 2231
// way (filename*=UTF-8”...), percent-encoded, so it may carry any byte.
func rfc2231Upload(encodedName, csv string) ([]byte, string) {
	const boundary = "rfc2231boundary0123456789"
	body := "--" + boundary + "\r\n" +
		"Content-Disposition: form-data; name=\"" + devices.FormField + "\"; filename*=UTF-8''" + encodedName + "\r\n" +
		"Content-Type: text/csv\r\n\r\n" + csv + "\r\n--" + boundary + "--\r\n"
	return []byte(body), "multipart/form-data; boundary=" + boundary
}

// Regression: a NUL byte in an RFC 2231 file name reached the
// INSERT, which Postgres refused: 500 with retryable true. Every control
// character in the name is the caller's mistake: 400, nothing stored.
func TestUploadRejectsControlCharactersInFileName(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	for i, name := range []string{"a%00b.csv", "a%1Bb.csv", "a%0Ab.csv", "a%7Fb.csv", "a%C2%85b.csv", "%E2%80%AEvsc.csv"} {
		body, ct := rfc2231Upload(name, "device_sn,target_agent_id\nAA00000001,agent-1\n")
		r := v.do(t, http.MethodPost, "/api/v1/device-assignments", "user-1", body,
			"Content-Type", ct, "X-Request-ID", fmt.Sprintf("upload-ctl-name-%02d", i))
		require.Equal(t, http.StatusBadRequest, r.Status, "name %q: %s", name, r.Body)
		require.Equal(t, devices.CodeFileNameInvalid, r.Error.Code, "name %q", name)
		require.False(t, r.Error.Retryable, "name %q", name)
		require.Regexp(t, `\p{Han}`, r.Error.Message)
	}
	require.Zero(t, v.count(t, "SELECT count(*) FROM ex_devices_task"), "rule: a refused upload stores nothing")

	body, ct := rfc2231Upload("%E8%AE%BE%E5%A4%87.csv", "device_sn,target_agent_id\nAA00000001,agent-1\n")
	r := v.do(t, http.MethodPost, "/api/v1/device-assignments", "user-1", body, "Content-Type", ct, "X-Request-ID", "upload-ctl-name-ok")
	require.Equal(t, http.StatusAccepted, r.Status, "a printable non-ASCII name is fine: %s", r.Body)
	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM ex_devices_task WHERE file_name = '设备.csv'"))
}

// csvRows is a template CSV with n data rows of junk (each a row failure).
func csvRows(n int) string {
	var b strings.Builder
	b.WriteString("device_sn,target_agent_id\n")
	for i := range n {
		b.WriteString("x" + strconv.Itoa(i) + ",\n")
	}
	return b.String()
}

// A file's rows are bounded at upload, before anything
// is stored or queued.
func TestUploadRowLimit(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	r, _ := v.upload(t, "user-1", "upload-rows-over-1", csvRows(devices.DefaultMaxRows+1))
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "body %s", r.Body)
	require.Equal(t, devices.CodeFileTooManyRows, r.Error.Code)
	require.False(t, r.Error.Retryable)
	require.Contains(t, r.Error.Message, strconv.Itoa(devices.DefaultMaxRows))
	require.Zero(t, v.count(t, "SELECT count(*) FROM ex_devices_task"))
	require.Zero(t, v.count(t, "SELECT count(*) FROM tb_outbox_event"))

	// Blank lines (a spreadsheet's trailing ones) are not rows.
	r, id := v.upload(t, "user-1", "upload-rows-at-lim", csvRows(devices.DefaultMaxRows)+"\n\r\n\n")
	require.Equal(t, http.StatusAccepted, r.Status, "body %s", r.Body)
	require.NotEmpty(t, id)
}

// Regression: 100,000 junk lines became 100,006 failure rows. The
// worker stores the first MaxStoredFailures failures in file order and
// counts the rest; the failures listing says how many were not stored.
func TestStoredFailuresAreCapped(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	csv := csvRows(9) + "AA00000001,agent-1\n" + csvRows(4)[len("device_sn,target_agent_id\n"):]
	_, id := v.upload(t, "user-1", "upload-fail-cap-01", csv)
	crashed := false
	w, err := devices.NewWorker(v.db, v.clock, devices.WorkerConfig{Owner: "w", ChunkSize: 3, MaxStoredFailures: 5})
	require.NoError(t, err)
	devices.SetAfterChunk(w, func(done int64) error {
		if done == 3 && !crashed {
			crashed = true
			return fmt.Errorf("crash after the first chunk")
		}
		return nil
	})
	require.Error(t, w.Process(t.Context(), id))
	v.clock.Advance(time.Minute) // the lease expires; the resumed run continues at row 4
	require.NoError(t, w.Process(t.Context(), id))

	got := v.getTask(t, "user-1", id)
	require.Equal(t, tasks.Completed, got.Status)
	require.EqualValues(t, 14, got.TotalCount)
	require.EqualValues(t, 1, got.SuccessCount)
	require.EqualValues(t, 13, got.FailedCount, "rule: every failure is counted")
	require.Equal(t, 5, v.count(t, "SELECT count(*) FROM ex_devices_failure WHERE task_id = ?", id), "rule: only the first 5 are stored")

	p := v.failures(t, "user-1", id, 1, 50)
	require.EqualValues(t, 5, p.Total)
	require.EqualValues(t, 8, p.NotStored, "rule: the listing says how many failures were not stored")
	require.Len(t, p.Items, 5)
	for i, it := range p.Items {
		require.Equal(t, i+2, it.RowNo, "rule: the first failures in file order are kept")
	}
}

// alignClock moves v's fake clock to the start of the next minute, so a
// test's uploads fall in one window of the rate.
func alignClock(v *env) {
	now := v.clock.Now()
	v.clock.Advance(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
}

// Uploads per principal per minute are bounded: checked first per clock
// minute (ratehttp, shared in Redis), then exactly in Postgres over the
// last 60 s, so the bound holds across api replicas. The refusal is 429
// with Retry-After; it is checked before any lookup, so a retry of an
// accepted upload is refused too until the window ends, then replays;
// another principal is not affected; the window moves with the clock.
func TestUploadRatePerPrincipal(t *testing.T) {
	t.Parallel()
	v := newEnvOpts(t, envOpts{fakeClock: true})
	alignClock(v)
	csv := "device_sn,target_agent_id\nAA00000001,agent-1\n"
	for i := range devices.DefaultUploadsPerMinute {
		r, _ := v.upload(t, "user-1", fmt.Sprintf("upload-rate-%04d", i), csv)
		require.Equal(t, http.StatusAccepted, r.Status, "upload %d: %s", i, r.Body)
		v.clock.Advance(time.Second)
	}
	r, _ := v.upload(t, "user-1", "upload-rate-over", csv)
	require.Equal(t, http.StatusTooManyRequests, r.Status, "body %s", r.Body)
	require.Equal(t, devices.CodeUploadRateLimited, r.Error.Code)
	require.True(t, r.Error.Retryable)
	require.Regexp(t, `\p{Han}`, r.Error.Message)
	// DefaultUploadsPerMinute seconds into the clock minute.
	require.Equal(t, strconv.Itoa(60-devices.DefaultUploadsPerMinute), r.Header.Get("Retry-After"))
	require.Equal(t, devices.DefaultUploadsPerMinute, v.count(t, "SELECT count(*) FROM ex_devices_task"))

	retry, _ := v.upload(t, "user-1", "upload-rate-0000", csv)
	require.Equal(t, http.StatusTooManyRequests, retry.Status, "rule: the rate is checked before any lookup: %s", retry.Body)

	other, _ := v.upload(t, "user-2", "upload-rate-other", csv)
	require.Equal(t, http.StatusAccepted, other.Status, "rule: the quota is per principal: %s", other.Body)

	v.clock.Advance(time.Duration(60-devices.DefaultUploadsPerMinute) * time.Second)
	again, _ := v.upload(t, "user-1", "upload-rate-later", csv)
	require.Equal(t, http.StatusAccepted, again.Status, "the window moved: %s", again.Body)
	replay, _ := v.upload(t, "user-1", "upload-rate-0000", csv)
	require.Equal(t, http.StatusAccepted, replay.Status, "rule: a retry of an accepted upload replays once the window allows it: %s", replay.Body)
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
}

// Regression: the upload quota was checked inside the upload's
// transaction, after taking a pooled connection and the principal's
// advisory lock, so 200 refused uploads held 17-20 of the api's 20
// connections. A refused upload now needs no connection: with every
// pooled connection held elsewhere it is still answered 429.
func TestRefusedUploadNeedsNoConnection(t *testing.T) {
	t.Parallel()
	v := newEnvOpts(t, envOpts{fakeClock: true})
	alignClock(v)
	csv := "device_sn,target_agent_id\nAA00000001,agent-1\n"
	for i := range devices.DefaultUploadsPerMinute {
		r, _ := v.upload(t, "user-1", fmt.Sprintf("upload-conn-%04d", i), csv)
		require.Equal(t, http.StatusAccepted, r.Status, "upload %d: %s", i, r.Body)
	}
	v.db.SetMaxOpenConns(1)
	conn, err := v.db.Conn(t.Context()) // the pool's only connection
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	body, ct := multipartCSV(t, devices.FormField, csv)
	req := apitest.Request{Method: http.MethodPost, Path: "/api/v1/device-assignments", Body: string(body),
		Token:  apitest.Token(t, secret, "user-1", devices.RoleAdmin),
		Header: map[string]string{"Content-Type": ct, "X-Request-ID": "upload-conn-over"}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // generous: the answer needs no wait at all
	t.Cleanup(cancel)
	res, err := apitest.Send(ctx, v.srv.URL, req)
	require.NoError(t, err, "rule: a refused upload is answered without a pooled connection")
	require.Equal(t, http.StatusTooManyRequests, res.Status, "body %s", res.Body)
	require.Equal(t, devices.CodeUploadRateLimited, res.Error.Code)
}

// REGRESSION: the upload quota was checked inside the transaction, after
// the principal's advisory lock, so refused uploads queued on that lock,
// each holding a pooled connection (200 refused uploads held 17-20 of the
// api's 20). An upload past the quota is now refused before the
// transaction: it is answered while another upload of the same principal
// holds the lock.
func TestUploadPastTheQuotaWaitsOnNoLock(t *testing.T) {
	t.Parallel()
	v := newEnvOpts(t, envOpts{fakeClock: true})
	csv := "device_sn,target_agent_id\nAA00000001,agent-1\n"
	for i := range devices.DefaultUploadsPerMinute {
		r, _ := v.upload(t, "user-1", fmt.Sprintf("upload-nolock-%04d", i), csv)
		require.Equal(t, http.StatusAccepted, r.Status, "upload %d: %s", i, r.Body)
	}
	tx, err := v.db.BeginTx(t.Context(), nil) // an upload of user-1 in progress
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(t.Context(), "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", devices.TaskTable+"/user-1")
	require.NoError(t, err)

	body, ct := multipartCSV(t, devices.FormField, csv)
	req := apitest.Request{Method: http.MethodPost, Path: "/api/v1/device-assignments", Body: string(body),
		Token:  apitest.Token(t, secret, "user-1", devices.RoleAgent),
		Header: map[string]string{"Content-Type": ct, "X-Request-ID": "upload-nolock-over"}}
	done := make(chan apitest.Response, 1)
	go func() {
		r, _ := apitest.Send(context.WithoutCancel(t.Context()), v.srv.URL, req)
		done <- r
	}()
	select {
	case r := <-done:
		require.Equal(t, http.StatusTooManyRequests, r.Status, r.Body)
	case <-time.After(time.Minute): // a generous cap: it waits on the lock forever
		t.Fatal("the refused upload waited on the principal's lock")
	}
}
