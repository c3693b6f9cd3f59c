// Package taskhttp renders the one task DTO every task endpoint shares and
// pages a business's failure details.
//
// Render writes tasks.View (task_id, status, status_name, counts, progress,
// error_summary, started_at, finished_at, updated_at) with a strong ETag of
// the body, answers a matching If-None-Match with 304 and no body, and sets
// Retry-After from tasks.PollHint (2 s, 3 s, 5 s, then 10 s) while the task
// is not terminal.
//
// HTTP is stateless, so the poll count comes from the client: it sends
// ?poll=N where N is how many polls it already made for this task (0 on the
// first read), increments it after each response, and resets it to 0 when
// the page becomes visible again (a page that comes back refreshes at once,
// then backs off anew). PollsSoFar reads it. Without it the step follows how long the task
// has been unchanged; a value that is not a non-negative integer is refused
// with 400 POLL_INVALID, as the contract declares it.
//
// Failure details stay in the business's own item table; ParsePage and
// RenderPage give every listing the same ?page=&page_size= parameters and
// {"items":[...],"page":1,"page_size":50,"total":N} shape.
package taskhttp
