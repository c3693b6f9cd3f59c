package devices_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/tasks"
	"github.com/july/template/examples/devices"
)

// partialCSV mixes every row failure with valid rows. Lines: 1 header,
// 2 ok, 3 empty serial, 4 malformed, 5 duplicate of line 2, 6 no target,
// 7 ok, 8 extra column, 9 bad target.
const partialCSV = "device_sn,target_agent_id\n" +
	"SN00000001,agent-1\n" +
	",agent-2\n" +
	"sn-bad,agent-3\n" +
	"SN00000001,agent-4\n" +
	"SN00000002,\n" +
	"SN00000003,agent-6\n" +
	"SN00000004,agent-7,surplus\n" +
	"SN00000005,agent with spaces\n"

func TestAllRowsSucceed(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	r, id := v.upload(t, "user-1", "upload-all-ok-01", "device_sn,target_agent_id\r\nAA00000001,agent-1\r\nAA00000002,agent-2\r\n\r\nAA00000003, agent-3 \r\n")
	require.Equal(t, http.StatusAccepted, r.Status, "body %s", r.Body)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))

	pending := v.do(t, http.MethodGet, "/api/v1/device-assignments/"+id, "user-1", nil)
	require.Equal(t, http.StatusOK, pending.Status)
	require.Equal(t, "2", pending.Header.Get("Retry-After"), "rule: poll back-off while pending")
	pv := taskOf(t, pending)
	requireValidDTO(t, pv)
	require.Equal(t, tasks.Pending, pv.Status)
	require.Nil(t, pv.StartedAt)

	require.NoError(t, v.worker(t, "w").Process(t.Context(), id))

	done := v.getTask(t, "user-1", id)
	require.Equal(t, tasks.Completed, done.Status)
	require.Equal(t, "已完成", done.StatusName)
	require.EqualValues(t, 3, done.TotalCount)
	require.EqualValues(t, 3, done.SuccessCount)
	require.Zero(t, done.FailedCount)
	require.Nil(t, done.ErrorSummary)
	require.NotNil(t, done.StartedAt)
	require.NotNil(t, done.FinishedAt)
	require.Equal(t, 3, v.count(t, "SELECT count(*) FROM ex_devices_assignment WHERE task_id = ?", id))
	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM ex_devices_assignment WHERE device_sn = 'AA00000003' AND agent_id = 'agent-3'"),
		"rule: cells are trimmed")
	p := v.failures(t, "user-1", id, 1, 50)
	require.Zero(t, p.Total)
	require.NotNil(t, p.Items, "rule: items is [] not null")
	require.Empty(t, p.Items)
}

func TestPartialSuccessIsCompletedWithCounts(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	_, id := v.upload(t, "user-1", "upload-partial-01", partialCSV)
	require.NoError(t, v.worker(t, "w").Process(t.Context(), id))

	got := v.getTask(t, "user-1", id)
	require.Equal(t, tasks.Completed, got.Status, "rule: partial success is completed, not a sixth state")
	require.EqualValues(t, 8, got.TotalCount)
	require.EqualValues(t, 2, got.SuccessCount)
	require.EqualValues(t, 6, got.FailedCount)
	require.Nil(t, got.ErrorSummary, "rule: row failures are details, not a task failure")

	want := []devices.FailureItem{
		{RowNo: 3, DeviceSN: "", Code: devices.CodeSNEmpty},
		{RowNo: 4, DeviceSN: "sn-bad", Code: devices.CodeSNMalformed},
		{RowNo: 5, DeviceSN: "SN00000001", Code: devices.CodeSNDuplicate},
		{RowNo: 6, DeviceSN: "SN00000002", Code: devices.CodeTargetMissing},
		{RowNo: 8, DeviceSN: "SN00000004", Code: devices.CodeRowColumns},
		{RowNo: 9, DeviceSN: "SN00000005", Code: devices.CodeTargetInvalid},
	}
	var all []devices.FailureItem
	for page := 1; page <= 4; page++ {
		p := v.failures(t, "user-1", id, page, 2)
		require.EqualValues(t, 6, p.Total, "page %d", page)
		require.Equal(t, page, p.Page)
		require.Equal(t, 2, p.PageSize)
		if page == 4 {
			require.Empty(t, p.Items, "rule: past the end is an empty page")
			continue
		}
		require.Len(t, p.Items, 2, "page %d", page)
		all = append(all, p.Items...)
	}
	require.Len(t, all, len(want))
	for i, w := range want {
		require.Equal(t, w.RowNo, all[i].RowNo, "failure %d", i)
		require.Equal(t, w.DeviceSN, all[i].DeviceSN, "failure %d", i)
		require.Equal(t, w.Code, all[i].Code, "failure %d", i)
		require.NotEmpty(t, all[i].Message, "failure %d", i)
		require.Regexp(t, `\p{Han}`, all[i].Message, "rule: messages are Chinese")
	}
	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM ex_devices_assignment WHERE device_sn = 'SN00000001' AND agent_id = 'agent-1'"),
		"rule: the first occurrence of a serial wins")
	require.Equal(t, 2, v.count(t, "SELECT count(*) FROM ex_devices_assignment WHERE task_id = ?", id))

	bad := v.do(t, http.MethodGet, "/api/v1/device-assignments/"+id+"/failures?page_size=500", "user-1", nil)
	require.Equal(t, http.StatusBadRequest, bad.Status)
	require.Equal(t, "PAGE_INVALID", bad.Error.Code)
}

func TestAllRowsFailingIsStillCompleted(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	_, id := v.upload(t, "user-1", "upload-all-bad-01", "device_sn,target_agent_id\n,a\nshort,b\nLONGENOUGH1,\n")
	require.NoError(t, v.worker(t, "w").Process(t.Context(), id))

	got := v.getTask(t, "user-1", id)
	require.Equal(t, tasks.Completed, got.Status)
	require.EqualValues(t, 3, got.TotalCount)
	require.Zero(t, got.SuccessCount)
	require.EqualValues(t, got.TotalCount, got.FailedCount)
	require.Equal(t, 100, got.Progress)
	require.Zero(t, v.count(t, "SELECT count(*) FROM ex_devices_assignment"))
}

func TestUnparsableFileFailsTheTask(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	tests := []struct {
		name string
		csv  string
		code string
	}{
		{"WrongHeader", "serial,agent\nSN00000001,agent-1\n", tasks.CodeFileUnparsable},
		{"NotCSV", "device_sn,target_agent_id\n\"SN00000001,agent-1\nx\"y,z\n", tasks.CodeFileUnparsable},
		{"Binary", "device_sn,target_agent_id\n\x00\xff\xfe", tasks.CodeFileUnparsable},
		{"HeaderOnly", "device_sn,target_agent_id\n", devices.CodeFileNoRows},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, id := v.upload(t, "user-1", fmt.Sprintf("upload-unparsable-%02d", i), tt.csv)
			require.Equal(t, http.StatusAccepted, r.Status, "rule: the upload does not parse the file; body %s", r.Body)
			require.NoError(t, v.worker(t, "w").Process(t.Context(), id), "file %q", tt.csv)

			got := v.getTask(t, "user-1", id)
			require.Equal(t, tasks.Failed, got.Status, "file %q", tt.csv)
			require.Equal(t, "已失败", got.StatusName)
			require.NotNil(t, got.ErrorSummary, "file %q", tt.csv)
			require.Equal(t, tt.code, got.ErrorSummary.Code, "file %q", tt.csv)
			if tt.code == tasks.CodeFileUnparsable {
				require.Equal(t, tasks.SummaryFor(tasks.CodeFileUnparsable).Message, got.ErrorSummary.Message)
			}
			require.NotContains(t, got.ErrorSummary.Message, "parse error", "rule: no parser internals")
			require.NotContains(t, got.ErrorSummary.Message, "csv")
			require.Zero(t, got.TotalCount)
			require.Zero(t, v.count(t, "SELECT count(*) FROM ex_devices_failure WHERE task_id = ?", id))
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)

	_, pending := v.upload(t, "user-1", "upload-cancel-01", "device_sn,target_agent_id\nCC00000001,agent-1\n")
	r := v.do(t, http.MethodPost, "/api/v1/device-assignments/"+pending+"/cancel", "user-1", nil)
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Body)
	cancelled := taskOf(t, r)
	requireValidDTO(t, cancelled)
	require.Equal(t, tasks.Cancelled, cancelled.Status)
	require.Equal(t, "已取消", cancelled.StatusName)
	require.Equal(t, tasks.CodeCancelled, cancelled.ErrorSummary.Code)

	require.NoError(t, v.worker(t, "w").Process(t.Context(), pending), "rule: the delivery of a cancelled task is acknowledged")
	require.Equal(t, tasks.Cancelled, v.getTask(t, "user-1", pending).Status)
	require.Zero(t, v.count(t, "SELECT count(*) FROM ex_devices_assignment WHERE task_id = ?", pending), "rule: nothing applied")

	// A retried cancel (the first answer was lost) succeeds with the
	// current view, so the caller learns its cancel worked.
	again := v.do(t, http.MethodPost, "/api/v1/device-assignments/"+pending+"/cancel", "user-1", nil)
	require.Equal(t, http.StatusOK, again.Status, "body %s", again.Body)
	repeated := taskOf(t, again)
	require.Equal(t, tasks.Cancelled, repeated.Status)
	require.Equal(t, cancelled.FinishedAt, repeated.FinishedAt, "rule: a repeated cancel changes nothing")

	_, done := v.upload(t, "user-1", "upload-cancel-02", "device_sn,target_agent_id\nCC00000002,agent-1\n")
	require.NoError(t, v.worker(t, "w").Process(t.Context(), done))
	late := v.do(t, http.MethodPost, "/api/v1/device-assignments/"+done+"/cancel", "user-1", nil)
	require.Equal(t, http.StatusConflict, late.Status, "body %s", late.Body)
	require.Equal(t, devices.CodeNotCancellable, late.Error.Code)
	require.Equal(t, tasks.Completed, v.getTask(t, "user-1", done).Status, "rule: a refused cancel changes nothing")
}

func TestRetriedUploadReturnsTheSameTask(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	csv := "device_sn,target_agent_id\nRR00000001,agent-1\n"

	first, id := v.upload(t, "user-1", "upload-retry-0001", csv)
	require.Equal(t, http.StatusAccepted, first.Status)
	require.Empty(t, first.Header.Get(idemhttp.HeaderReplayed))

	second, id2 := v.upload(t, "user-1", "upload-retry-0001", csv)
	require.Equal(t, http.StatusAccepted, second.Status, "body %s", second.Body)
	require.Equal(t, "true", second.Header.Get(idemhttp.HeaderReplayed))
	require.Equal(t, id, id2, "rule: a retry returns the same task id")
	require.Equal(t, string(first.Body), string(second.Body), "rule: a replay is the original body, byte for byte")
	require.Equal(t, first.Header.Get("Content-Type"), second.Header.Get("Content-Type"), "rule: a replay has the original Content-Type")

	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM ex_devices_task"), "rule: one task row")
	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM tb_outbox_event WHERE event_type = ?", devices.EventAssignmentRequested),
		"rule: one outbox event")

	reused, _ := v.upload(t, "user-1", "upload-retry-0001", csv+"RR00000002,agent-2\n")
	require.Equal(t, http.StatusUnprocessableEntity, reused.Status)
	require.Equal(t, idemhttp.CodeKeyReused, reused.Error.Code)

	other, otherID := v.upload(t, "user-2", "upload-retry-0001", csv)
	require.Equal(t, http.StatusAccepted, other.Status, "rule: keys are scoped to the caller")
	require.NotEqual(t, id, otherID)
	require.Equal(t, 2, v.count(t, "SELECT count(*) FROM ex_devices_task"))
	require.Equal(t, 2, v.count(t, "SELECT count(*) FROM tb_outbox_event"))
}

// A real client (curl -F, a browser) picks a new boundary on every send:
// the retry is not byte-identical and must still return the same task.
func TestRetriedUploadWithNewBoundaryReturnsTheSameTask(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	csv := "device_sn,target_agent_id\nRB00000001,agent-1\n"

	first, id := v.uploadWith(t, "------------------------d74496d66958873e", "user-1", "upload-boundary-01", csv)
	require.Equal(t, http.StatusAccepted, first.Status, "body %s", first.Body)
	require.Empty(t, first.Header.Get(idemhttp.HeaderReplayed))

	second, id2 := v.uploadWith(t, "----WebKitFormBoundary7MA4YWxkTrZu0gW", "user-1", "upload-boundary-01", csv)
	require.Equal(t, http.StatusAccepted, second.Status, "rule: a new boundary is still a retry; body %s", second.Body)
	require.Equal(t, "true", second.Header.Get(idemhttp.HeaderReplayed))
	require.Equal(t, id, id2, "rule: a retry returns the same task id")
	require.Equal(t, string(first.Body), string(second.Body), "rule: a replay is the original body, byte for byte")
	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM ex_devices_task"), "rule: one task row")
	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM tb_outbox_event WHERE event_type = ?", devices.EventAssignmentRequested),
		"rule: one outbox event")

	changed, _ := v.uploadWith(t, "----WebKitFormBoundaryQx9d2Lr0aVb3kP1z", "user-1", "upload-boundary-01", csv+"RB00000002,agent-2\n")
	require.Equal(t, http.StatusUnprocessableEntity, changed.Status, "body %s", changed.Body)
	require.Equal(t, idemhttp.CodeKeyReused, changed.Error.Code)
	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM ex_devices_task"), "rule: a reused key stores nothing")
}

func TestForeignOrMissingTaskIsNotFound(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	_, id := v.upload(t, "owner", "upload-foreign-01", "device_sn,target_agent_id\nFF00000001,agent-1\n")
	stranger := agentCaller("stranger") // an agent: an admin sees every task

	var bodies []string
	for _, suffix := range []string{"", "/failures"} {
		r := v.doAs(t, http.MethodGet, "/api/v1/device-assignments/not-a-uuid"+suffix, stranger, nil)
		require.Equal(t, http.StatusBadRequest, r.Status, "rule: a malformed id is the caller's mistake, named, with no lookup")
		require.Equal(t, "task_id", r.Error.Details[0].Field)
	}
	for _, target := range []string{id, uuid.NewString()} {
		for _, suffix := range []string{"", "/failures"} {
			r := v.doAs(t, http.MethodGet, "/api/v1/device-assignments/"+target+suffix, stranger, nil)
			require.Equal(t, http.StatusNotFound, r.Status, "GET %s%s", target, suffix)
			require.Equal(t, devices.CodeTaskNotFound, r.Error.Code)
			bodies = append(bodies, stripRequestID(string(r.Body)))
		}
		r := v.doAs(t, http.MethodPost, "/api/v1/device-assignments/"+target+"/cancel", stranger, nil)
		require.Equal(t, http.StatusNotFound, r.Status, "cancel %s", target)
	}
	for _, b := range bodies[1:] {
		require.Equal(t, bodies[0], b, "rule: foreign and missing are indistinguishable")
	}
	require.Equal(t, tasks.Pending, v.getTask(t, "owner", id).Status, "rule: the stranger's cancel changed nothing")
}

func stripRequestID(body string) string {
	i := strings.Index(body, `"request_id":"`)
	if i < 0 {
		return body
	}
	j := strings.Index(body[i+len(`"request_id":"`):], `"`)
	return body[:i] + body[i+len(`"request_id":"`)+j+1:]
}

func TestUploadValidation(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	okBody, okCT := multipartCSV(t, devices.FormField, "device_sn,target_agent_id\nVV00000001,a\n")
	wrongField, wrongCT := multipartCSV(t, "upload", "device_sn,target_agent_id\nVV00000001,a\n")
	emptyFile, emptyCT := multipartCSV(t, devices.FormField, "")
	bigFile, bigCT := multipartCSV(t, devices.FormField, strings.Repeat("x", devices.MaxFileBytes+1))
	hugeBody, hugeCT := multipartCSV(t, devices.FormField, strings.Repeat("x", 3*devices.MaxFileBytes))

	tests := []struct {
		name    string
		sub     string
		body    []byte
		headers []string
		status  int
		code    string
	}{
		{"NoKey", "u", okBody, []string{"Content-Type", okCT}, http.StatusBadRequest, idemhttp.CodeKeyMissing},
		{"Unauthenticated", "", okBody, []string{"Content-Type", okCT, "X-Request-ID", "upload-val-0001"}, http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"WrongField", "u", wrongField, []string{"Content-Type", wrongCT, "X-Request-ID", "upload-val-0002"}, http.StatusBadRequest, devices.CodeFileMissing},
		{"EmptyFile", "u", emptyFile, []string{"Content-Type", emptyCT, "X-Request-ID", "upload-val-0003"}, http.StatusBadRequest, devices.CodeFileMissing},
		{"NotMultipart", "u", []byte(`{"file":"x"}`), []string{"Content-Type", "application/json", "X-Request-ID", "upload-val-0004"}, http.StatusBadRequest, devices.CodeFileMissing},
		{"FileTooLarge", "u", bigFile, []string{"Content-Type", bigCT, "X-Request-ID", "upload-val-0005"}, http.StatusRequestEntityTooLarge, devices.CodeFileTooLarge},
		{"BodyTooLarge", "u", hugeBody, []string{"Content-Type", hugeCT, "X-Request-ID", "upload-val-0006"}, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := v.do(t, http.MethodPost, "/api/v1/device-assignments", tt.sub, tt.body, tt.headers...)
			require.Equal(t, tt.status, r.Status, "%s: body %.300s", tt.name, r.Body)
			require.Equal(t, tt.code, r.Error.Code, tt.name)
		})
	}
	require.Zero(t, v.count(t, "SELECT count(*) FROM ex_devices_task"), "rule: a refused upload stores nothing")
	require.Zero(t, v.count(t, "SELECT count(*) FROM tb_outbox_event"))
}

// ?poll= is declared a non-negative integer: -1 or abc is the client's
// bug, 400 POLL_INVALID naming the field, before any lookup.
func TestGetRefusesAMalformedPoll(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	_, id := v.upload(t, "user-1", "upload-poll-0001", "device_sn,target_agent_id\nPP00000001,agent-1\n")
	for _, poll := range []string{"-1", "abc"} {
		for _, target := range []string{id, uuid.NewString()} {
			r := v.do(t, http.MethodGet, "/api/v1/device-assignments/"+target+"?poll="+poll, "user-1", nil)
			require.Equal(t, http.StatusBadRequest, r.Status, "rule: poll=%s is refused: %s", poll, r.Body)
			require.Equal(t, "POLL_INVALID", r.Error.Code)
			require.Equal(t, "poll", r.Error.Details[0].Field)
		}
	}
	ok := v.do(t, http.MethodGet, "/api/v1/device-assignments/"+id+"?poll=1", "user-1", nil)
	require.Equal(t, http.StatusOK, ok.Status, ok.Body)
	require.Equal(t, "3", ok.Header.Get("Retry-After"), "poll=1 waits 3 s")
}
