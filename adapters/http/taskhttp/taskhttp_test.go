package taskhttp_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/taskhttp"
	"github.com/july/template/core/tasks"
)

var t0 = time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)

// fixture is a real echo server over an in-memory set of tasks and 7
// failure details per task.
type fixture struct {
	srv   *httptest.Server
	mu    sync.Mutex
	tasks map[string]tasks.Task
}

type failure struct {
	Row    int    `json:"row"`
	Reason string `json:"reason"`
}

func newFixture(t *testing.T, ts ...tasks.Task) *fixture {
	t.Helper()
	f := &fixture{tasks: map[string]tasks.Task{}}
	for _, tk := range ts {
		f.tasks[tk.ID] = tk
	}
	e := httpx.NewServer(httpx.ServerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e.GET("/tasks/:id", func(c echo.Context) error {
		f.mu.Lock()
		tk, ok := f.tasks[c.Param("id")]
		f.mu.Unlock()
		if !ok {
			return httpx.NotFound("TASK_NOT_FOUND", "任务不存在")
		}
		polls, err := taskhttp.PollsSoFar(c)
		if err != nil {
			return err
		}
		return taskhttp.Render(c, tk, polls)
	})
	e.GET("/tasks/:id/failures", func(c echo.Context) error {
		p, err := taskhttp.ParsePage(c)
		if err != nil {
			return err
		}
		const total = 7
		var items []failure
		for i := p.Offset(); i < min(total, p.Offset()+p.Limit()); i++ {
			items = append(items, failure{Row: i + 1, Reason: "设备编号不存在"})
		}
		return taskhttp.RenderPage(c, p, items, total)
	})
	f.srv = httptest.NewServer(e)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) set(tk tasks.Task) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks[tk.ID] = tk
}

func (f *fixture) get(t *testing.T, path string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.srv.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// The server's own client: another parallel test's httptest.Server.Close
	// closes http.DefaultTransport's connections, this one's included.
	res, err := f.srv.Client().Do(req)
	require.NoError(t, err, "GET %s", path)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, body
}

// taskIn drives a task with 3 items to status s through the core rules.
func taskIn(t *testing.T, id string, s tasks.Status) tasks.Task {
	t.Helper()
	tk, err := tasks.NewTask(id, 3, t0)
	require.NoError(t, err)
	if s == tasks.Pending {
		return tk
	}
	if s == tasks.Cancelled {
		tk, err = tk.Cancel(true, t0.Add(time.Second))
		require.NoError(t, err)
		return tk
	}
	tk, err = tk.Claim("worker-a", t0, time.Minute)
	require.NoError(t, err)
	tk, err = tk.RecordProgress("worker-a", 1, 2, 0, t0.Add(time.Second))
	require.NoError(t, err)
	switch s {
	case tasks.Completed:
		tk, err = tk.RecordProgress("worker-a", 1, 0, 1, t0.Add(2*time.Second))
		require.NoError(t, err)
		tk, err = tk.Complete("worker-a", 1, t0.Add(2*time.Second))
	case tasks.Failed:
		tk, err = tk.Fail("worker-a", 1, tasks.SummaryFor(tasks.CodeFileUnparsable), t0.Add(2*time.Second))
	}
	require.NoError(t, err, "drive %s to %s", id, s)
	return tk
}

func TestTaskRenderDTOForEveryStatus(t *testing.T) {
	t.Parallel()

	type want struct {
		name      string
		counts    [3]float64
		progress  float64
		summary   any
		started   bool
		finished  bool
		pollAfter string
	}
	cases := map[tasks.Status]want{
		tasks.Pending:    {"待处理", [3]float64{3, 0, 0}, 0, nil, false, false, "2"},
		tasks.Processing: {"处理中", [3]float64{3, 2, 0}, 66, nil, true, false, "2"},
		tasks.Completed:  {"已完成", [3]float64{3, 2, 1}, 100, nil, true, true, ""},
		tasks.Failed: {"已失败", [3]float64{3, 2, 0}, 66, map[string]any{
			"code": tasks.CodeFileUnparsable, "message": tasks.SummaryFor(tasks.CodeFileUnparsable).Message,
		}, true, true, ""},
		tasks.Cancelled: {"已取消", [3]float64{3, 0, 0}, 0, map[string]any{
			"code": tasks.CodeCancelled, "message": tasks.SummaryFor(tasks.CodeCancelled).Message,
		}, false, true, ""},
	}
	var all []tasks.Task
	for s := range cases {
		all = append(all, taskIn(t, "t-"+s.String(), s))
	}
	f := newFixture(t, all...)
	for s, w := range cases {
		res, body := f.get(t, "/tasks/t-"+s.String(), nil)
		require.Equal(t, http.StatusOK, res.StatusCode, "GET %s: %s", s, body)
		require.Contains(t, res.Header.Get("Content-Type"), "application/json")
		var v map[string]any
		require.NoError(t, json.Unmarshal(body, &v), "body %s", body)
		keys := []string{}
		for k := range v {
			keys = append(keys, k)
		}
		require.ElementsMatch(t, []string{"task_id", "status", "status_name", "total_count", "success_count", "failed_count",
			"progress", "error_summary", "started_at", "finished_at", "updated_at"}, keys, "rule: the DTO has exactly the shared keys (%s)", s)
		require.Equal(t, "t-"+s.String(), v["task_id"])
		require.InDelta(t, float64(s), v["status"], 0, "status of %s", s)
		require.Equal(t, w.name, v["status_name"], "rule: status %d is named %s", s, w.name)
		require.Equal(t, w.counts, [3]float64{v["total_count"].(float64), v["success_count"].(float64), v["failed_count"].(float64)}, "counts of %s", s)
		require.InDelta(t, w.progress, v["progress"], 0, "progress of %s", s)
		require.Equal(t, w.summary, v["error_summary"], "error_summary of %s", s)
		require.Equal(t, w.started, v["started_at"] != nil, "started_at of %s: %v", s, v["started_at"])
		require.Equal(t, w.finished, v["finished_at"] != nil, "finished_at of %s: %v", s, v["finished_at"])
		require.NotEmpty(t, v["updated_at"], "updated_at of %s", s)
		require.Equal(t, w.pollAfter, res.Header.Get("Retry-After"), "rule: Retry-After only while %s is not terminal", s)
		require.Regexp(t, `^"[0-9a-f]{32}"$`, res.Header.Get("ETag"), "strong ETag on %s", s)
	}
}

func TestTaskRenderRetryAfterBacksOff(t *testing.T) {
	t.Parallel()

	f := newFixture(t, taskIn(t, "busy", tasks.Processing))
	for _, tc := range []struct{ poll, want string }{
		{"", "2"}, {"0", "2"}, {"1", "3"}, {"2", "5"}, {"3", "10"}, {"4", "10"}, {"1000", "10"},
		{"99999999999999999999999", "10"},
	} {
		res, body := f.get(t, "/tasks/busy?poll="+tc.poll, nil)
		require.Equal(t, http.StatusOK, res.StatusCode, "poll=%s: %s", tc.poll, body)
		require.Equal(t, tc.want, res.Header.Get("Retry-After"), "rule: poll=%q waits %s s (2, 3, 5, then 10)", tc.poll, tc.want)
	}
}

// The contract declares ?poll= a non-negative integer: anything else is a
// client bug, refused with 400 POLL_INVALID naming the field, not
// silently treated as a first poll.
func TestTaskRenderRefusesAMalformedPoll(t *testing.T) {
	t.Parallel()

	f := newFixture(t, taskIn(t, "busy", tasks.Processing))
	for _, poll := range []string{"-1", "abc", "1.5", "+1", "1e3", "%20"} {
		res, body := f.get(t, "/tasks/busy?poll="+poll, nil)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "rule: poll=%s is refused: %s", poll, body)
		var env struct {
			Error struct {
				Code    string           `json:"code"`
				Message string           `json:"message"`
				Details []map[string]any `json:"details"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &env), "body %s", body)
		require.Equal(t, taskhttp.CodePollInvalid, env.Error.Code, "poll=%s", poll)
		require.Contains(t, env.Error.Message, "poll", "the message names the parameter")
		require.Len(t, env.Error.Details, 1, "poll=%s", poll)
		require.Equal(t, taskhttp.PollParam, env.Error.Details[0]["field"])
	}
}

func TestTaskRenderETagAnswers304UntilTheTaskChanges(t *testing.T) {
	t.Parallel()

	tk := taskIn(t, "job", tasks.Processing)
	f := newFixture(t, tk)
	res, first := f.get(t, "/tasks/job", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	tag := res.Header.Get("ETag")
	require.NotEmpty(t, tag)
	require.Equal(t, "private, no-cache", res.Header.Get("Cache-Control"))

	for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, "*"} {
		res, body := f.get(t, "/tasks/job?poll=2", map[string]string{"If-None-Match": inm})
		require.Equal(t, http.StatusNotModified, res.StatusCode, "rule: If-None-Match %s on an unchanged task is 304", inm)
		require.Empty(t, body, "a 304 has no body")
		require.Equal(t, tag, res.Header.Get("ETag"), "a 304 repeats the ETag")
		require.Equal(t, "5", res.Header.Get("Retry-After"), "a 304 still carries the poll hint")
	}
	res, _ = f.get(t, "/tasks/job", map[string]string{"If-None-Match": `"stale"`})
	require.Equal(t, http.StatusOK, res.StatusCode, "a non-matching tag gets the body")

	tk, err := tk.RecordProgress("worker-a", 1, 0, 1, t0.Add(3*time.Second))
	require.NoError(t, err)
	f.set(tk)
	res, body := f.get(t, "/tasks/job", map[string]string{"If-None-Match": tag})
	require.Equal(t, http.StatusOK, res.StatusCode, "rule: a changed task answers 200 to the old ETag")
	require.NotEqual(t, tag, res.Header.Get("ETag"), "rule: a changed task has a new ETag")
	require.NotEqual(t, string(first), string(body))
	require.Contains(t, string(body), `"failed_count":1`)
}

func TestTaskPage(t *testing.T) {
	t.Parallel()

	f := newFixture(t)
	for _, tc := range []struct {
		query            string
		page, size, rows int
	}{
		{"", 1, 50, 7},
		{"?page=2&page_size=3", 2, 3, 3},
		{"?page=3&page_size=3", 3, 3, 1},
		{"?page=9&page_size=200", 9, 200, 0},
		{"?page=100000&page_size=1", 100000, 1, 0},
	} {
		res, body := f.get(t, "/tasks/x/failures"+tc.query, nil)
		require.Equal(t, http.StatusOK, res.StatusCode, "query %q: %s", tc.query, body)
		var p taskhttp.Page[failure]
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, [3]int{tc.page, tc.size, tc.rows}, [3]int{p.Page, p.PageSize, len(p.Items)}, "query %q: page, page_size, items", tc.query)
		require.Equal(t, int64(7), p.Total, "query %q total", tc.query)
		require.Contains(t, string(body), `"items":[`, "rule: items is never null (query %q)", tc.query)
	}

	for _, q := range []string{"?page_size=201", "?page_size=0", "?page=0", "?page=abc", "?page=-1", "?page_size=1.5", "?page=100001"} {
		res, body := f.get(t, "/tasks/x/failures"+q, nil)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "rule: %s is refused: %s", q, body)
		var env struct {
			Error struct {
				Code    string           `json:"code"`
				Details []map[string]any `json:"details"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &env), "body %s", body)
		require.Equal(t, taskhttp.CodePageInvalid, env.Error.Code, "query %s", q)
		require.Len(t, env.Error.Details, 1, "query %s names the field", q)
	}
}

func TestTaskPageRequestOffset(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ page, size, offset int }{{1, 50, 0}, {2, 50, 50}, {3, 200, 400}} {
		p := taskhttp.PageRequest{Page: tc.page, PageSize: tc.size}
		require.Equal(t, tc.offset, p.Offset(), "offset of %+v", p)
		require.Equal(t, tc.size, p.Limit(), "limit of %+v", p)
	}
	a, b := taskhttp.ETag([]byte(`{"status":1}`)), taskhttp.ETag([]byte(`{"status":2}`))
	require.Equal(t, a, taskhttp.ETag([]byte(`{"status":1}`)), "the same body has the same ETag")
	require.NotEqual(t, a, b, "different bodies have different ETags")
}

func TestTaskRenderRetryAfterWithoutPollFollowsTaskAge(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		age  time.Duration
		want string
	}{
		{0, "2"}, {3 * time.Second, "3"}, {7 * time.Second, "5"}, {time.Minute, "10"},
	} {
		tk := taskIn(t, "aging", tasks.Processing)
		tk.UpdatedAt = time.Now().Add(-tc.age)
		f := newFixture(t, tk)
		res, body := f.get(t, "/tasks/aging", nil)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
		require.Equal(t, tc.want, res.Header.Get("Retry-After"),
			"rule: without ?poll the hint follows how long the task has been unchanged (%s)", tc.age)
	}
}
