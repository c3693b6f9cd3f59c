package devices_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/tasks"
	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// Regression: an agent may not take another agent's
// device, nor hand a device to somebody else; both rows become failure
// rows with their reason and the assignment stays as it was. An admin
// may reassign.
func TestAgentCannotReassignAnotherAgentsDevice(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	w := v.worker(t, "authz")
	run := func(c caller, key, csv string) tasks.View {
		t.Helper()
		r, id := v.uploadAs(t, c, key, csv)
		require.Equal(t, http.StatusAccepted, r.Status, "upload as %+v: %s", c, r.Body)
		require.NoError(t, w.Process(t.Context(), id))
		got := v.getTaskAs(t, c, id)
		require.Equal(t, tasks.Completed, got.Status)
		return got
	}
	owner := func(sn string) string {
		t.Helper()
		var agent string
		err := v.db.NewSelect().Table("ex_devices_assignment").Column("agent_id").Where("device_sn = ?", sn).Scan(t.Context(), &agent)
		if err != nil {
			require.ErrorContains(t, err, "no rows")
		}
		return agent
	}

	a, b := agentCaller("agent-a"), agentCaller("agent-b")
	got := run(a, "authz-repro-0001", "device_sn,target_agent_id\nDEVA0000001,agent-a\n")
	require.EqualValues(t, 1, got.SuccessCount)
	require.Equal(t, "agent-a", owner("DEVA0000001"))

	got = run(b, "authz-repro-0002", "device_sn,target_agent_id\nDEVA0000001,agent-b\nDEVA0000002,some-other-agent\nDEVA0000003,agent-b\n")
	require.EqualValues(t, 3, got.TotalCount)
	require.EqualValues(t, 1, got.SuccessCount, "only the unowned device assigned to agent-b itself is applied")
	require.EqualValues(t, 2, got.FailedCount)
	require.Equal(t, "agent-a", owner("DEVA0000001"), "rule: another agent's device is never taken over")
	require.Empty(t, owner("DEVA0000002"), "rule: an agent never assigns to somebody else")
	require.Equal(t, "agent-b", owner("DEVA0000003"))
	p := v.failuresAs(t, b, got.TaskID, 1, 50)
	require.Len(t, p.Items, 2)
	require.Equal(t, 2, p.Items[0].RowNo)
	require.Equal(t, "DEVA0000001", p.Items[0].DeviceSN)
	require.Equal(t, devices.CodeOwnedByOther, p.Items[0].Code)
	require.Contains(t, p.Items[0].Message, "其他代理商")
	require.Equal(t, 3, p.Items[1].RowNo)
	require.Equal(t, devices.CodeTargetForbidden, p.Items[1].Code)
	require.Contains(t, p.Items[1].Message, "只能把设备分配给自己")

	// Its own device again (a re-upload) is applied.
	got = run(a, "authz-repro-0003", "device_sn,target_agent_id\nDEVA0000001,agent-a\n")
	require.EqualValues(t, 1, got.SuccessCount)

	// An admin reassigns, to anyone.
	got = run(adminCaller("ops-1"), "authz-repro-0004", "device_sn,target_agent_id\nDEVA0000001,agent-b\nDEVA0000002,some-other-agent\n")
	require.EqualValues(t, 2, got.SuccessCount)
	require.Equal(t, "agent-b", owner("DEVA0000001"))
	require.Equal(t, "some-other-agent", owner("DEVA0000002"))
}

// Every route × role, on a task agent-a uploaded: no roles is 403
// FORBIDDEN before any lookup (the same body for an existing and a
// missing task), an agent reads and cancels only its own tasks (another
// agent's task is 404 like a missing one), an admin every task.
func TestRouteRoleMatrix(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	owner := agentCaller("agent-a")
	callers := map[string]caller{
		"no roles":    {sub: "agent-a"}, // even the owner's own subject
		"other role":  {sub: "agent-a", roles: []string{"super_admin"}},
		"agent":       owner,
		"other agent": agentCaller("agent-b"),
		"admin":       adminCaller("ops-1"),
		// Roles are per domain: the top-up admin is nobody here.
		"topup admin": {sub: "ops-2", roles: []string{topup.RoleAdmin, topup.RoleAgent}},
	}
	_, id := v.uploadAs(t, owner, "authz-matrix-0001", "device_sn,target_agent_id\nMX00000001,agent-a\n")
	require.NotEmpty(t, id)
	missing := uuid.NewString()
	tasksPath := "/api/v1/device-assignments/"

	tests := []struct {
		route, method, path string
		want                map[string]int // by caller
	}{
		{"get task", http.MethodGet, tasksPath + id, map[string]int{"no roles": 403, "other role": 403, "topup admin": 403, "agent": 200, "other agent": 404, "admin": 200}},
		{"get missing task", http.MethodGet, tasksPath + missing, map[string]int{"no roles": 403, "other role": 403, "topup admin": 403, "agent": 404, "other agent": 404, "admin": 404}},
		{"failures", http.MethodGet, tasksPath + id + "/failures", map[string]int{"no roles": 403, "other role": 403, "topup admin": 403, "agent": 200, "other agent": 404, "admin": 200}},
		{"failures of missing", http.MethodGet, tasksPath + missing + "/failures", map[string]int{"no roles": 403, "other role": 403, "topup admin": 403, "agent": 404, "other agent": 404, "admin": 404}},
		// Cancel last: the refused ones first, then the owner, then the
		// admin (a repeated cancel answers 200).
		{"cancel refused", http.MethodPost, tasksPath + id + "/cancel", map[string]int{"no roles": 403, "other role": 403, "topup admin": 403, "other agent": 404}},
		{"cancel missing", http.MethodPost, tasksPath + missing + "/cancel", map[string]int{"no roles": 403, "other role": 403, "topup admin": 403, "agent": 404, "admin": 404}},
	}
	forbidden := map[string]string{}
	for _, tt := range tests {
		for who, want := range tt.want {
			r := v.doAs(t, tt.method, tt.path, callers[who], nil)
			require.Equal(t, want, r.Status, "%s as %s: %s", tt.route, who, r.Body)
			switch want {
			case http.StatusForbidden:
				require.Equal(t, httpx.CodeForbidden, r.Error.Code)
				require.Contains(t, r.Error.Message, "需要设备代理商（devices.agent）或设备管理员（devices.admin）角色")
				forbidden[tt.route+" "+who] = stripRequestID(string(r.Body))
			case http.StatusNotFound:
				require.Equal(t, devices.CodeTaskNotFound, r.Error.Code)
			}
		}
	}
	for k, b := range forbidden {
		require.Equal(t, forbidden["get task no roles"], b, "rule: every 403 is the same, existing or missing (%s)", k)
	}
	require.Equal(t, tasks.Pending, v.getTaskAs(t, owner, id).Status, "rule: refused cancels changed nothing")
	for _, who := range []string{"agent", "admin"} {
		r := v.doAs(t, http.MethodPost, tasksPath+id+"/cancel", callers[who], nil)
		require.Equal(t, http.StatusOK, r.Status, "cancel as %s: %s", who, r.Body)
		require.Equal(t, tasks.Cancelled, taskOf(t, r).Status)
	}

	// Upload: agent, other agent and admin create their own task; no
	// roles is 403 and stores nothing.
	before := v.count(t, "SELECT count(*) FROM ex_devices_task")
	for who, want := range map[string]int{"no roles": 403, "other role": 403, "topup admin": 403, "agent": 202, "other agent": 202, "admin": 202} {
		r, _ := v.uploadAs(t, callers[who], "authz-matrix-up-"+strings.ReplaceAll(who, " ", "-"), "device_sn,target_agent_id\nMX00000002,agent-a\n")
		require.Equal(t, want, r.Status, "upload as %s: %s", who, r.Body)
		if want == http.StatusForbidden {
			require.Equal(t, httpx.CodeForbidden, r.Error.Code)
		}
	}
	require.Equal(t, before+3, v.count(t, "SELECT count(*) FROM ex_devices_task"), "rule: a refused upload stores nothing")
	require.Equal(t, 1, v.count(t, "SELECT count(*) FROM ex_devices_task WHERE assign_any"), "rule: only the admin's upload may assign any device")
}

// REGRESSION: the upload's idempotency middleware read and parsed the
// multipart body before the role check, so a roleless token got 400
// REQUEST_INVALID for a malformed body. Now the role decides first on
// every route: 403 whatever the body, which is not even read. The body is
// declared and never sent (over net/http's 256 KiB post-handler discard):
// a server that read it would answer 408 BODY_TOO_SLOW instead.
func TestRoutesCheckTheRoleBeforeTheBody(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	tok := apitest.Token(t, secret, "agent-a")
	for i, path := range []string{"/api/v1/device-assignments", "/api/v1/device-assignments/" + uuid.NewString() + "/cancel"} {
		raw := apitest.Raw(t, v.srv.URL, "POST "+path+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+
			"\r\nContent-Type: multipart/form-data; boundary=b\r\nX-Request-ID: authz-body-00000"+strconv.Itoa(i)+"\r\nContent-Length: 524288\r\n\r\n")
		require.Equal(t, http.StatusForbidden, raw.Status, "%s: %s", path, raw.Body)
	}
	require.Zero(t, v.count(t, "SELECT count(*) FROM ex_devices_task"))
}
