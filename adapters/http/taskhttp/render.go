package taskhttp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/tasks"
)

// PollParam is the query parameter carrying how many polls the client
// already made for the task (see the package doc).
const PollParam = "poll"

// CodePollInvalid is the stable error code of a ?poll= that is not a
// non-negative integer.
const CodePollInvalid = "POLL_INVALID"

var errPollInvalid = httpx.BadRequest(CodePollInvalid,
	"轮询参数无效：poll 须为不小于 0 的整数（已轮询的次数，首次为 0），或不传").
	WithDetails(httpx.Detail{Field: PollParam, Reason: "须为不小于 0 的整数"})

// PollsSoFar returns the ?poll= count of c, or -1 when it is absent (or
// empty); Render then derives the step from how long the task has been
// unchanged. A value that is not a non-negative integer (-1, abc, 1.5) is
// a 400 *httpx.Error with code CodePollInvalid and a detail naming poll:
// the contract declares a non-negative integer, and a client bug that
// sends something else should hear about it rather than poll at the
// wrong pace. A count too large for an int is the largest step.
func PollsSoFar(c echo.Context) (int, error) {
	raw := c.QueryParam(PollParam)
	if raw == "" {
		return -1, nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return 0, errPollInvalid
		}
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return math.MaxInt, nil //nolint:nilerr // only digits: too large, which the caller caps
	}
	return n, nil
}

// pollsSince maps how long a task has been unchanged to the poll step a
// client that counts its polls would be at: the 2 s, 3 s, 5 s, 10 s
// sequence then follows without client state, and a task that keeps
// changing keeps the short interval.
func pollsSince(updated, now time.Time) int {
	switch age := now.Sub(updated); {
	case age < 2*time.Second:
		return 0
	case age < 5*time.Second:
		return 1
	case age < 10*time.Second:
		return 2
	}
	return 3
}

// Render writes t as a tasks.View JSON body with status 200. It always sets
// ETag (a strong hash of the body), Cache-Control: private, no-cache (per-user; clients
// revalidate every poll) and, while t is not terminal, Retry-After from
// tasks.PollHint(t.Status, pollsSoFar) (a negative pollsSoFar: from how
// long t has been unchanged). When the request's If-None-Match
// matches the ETag it answers 304 with the same headers and no body.
func Render(c echo.Context, t tasks.Task, pollsSoFar int) error {
	body, err := json.Marshal(t.View())
	if err != nil {
		return fmt.Errorf("render task %q: %w", t.ID, err)
	}
	tag := ETag(body)
	h := c.Response().Header()
	h.Set("ETag", tag)
	h.Set(echo.HeaderCacheControl, "private, no-cache")
	if pollsSoFar < 0 {
		pollsSoFar = pollsSince(t.UpdatedAt, time.Now())
	}
	if d, ok := tasks.PollHint(t.Status, pollsSoFar); ok {
		h.Set(echo.HeaderRetryAfter, tasks.RetryAfterSeconds(d))
	}
	if noneMatch(c.Request().Header.Get("If-None-Match"), tag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSONBlob(http.StatusOK, body)
}

// ETag returns the strong entity tag of a rendered body: the quoted first
// 128 bits of its SHA-256, so any change to any field of the view changes it.
func ETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// noneMatch reports whether an If-None-Match header matches tag, using the
// weak comparison RFC 9110 prescribes for it: "*" or any listed tag equal
// to tag once a W/ prefix is dropped.
func noneMatch(header, tag string) bool {
	for cand := range strings.SplitSeq(header, ",") {
		cand = strings.TrimSpace(cand)
		if cand == "*" || strings.TrimPrefix(cand, "W/") == tag {
			return true
		}
	}
	return false
}
