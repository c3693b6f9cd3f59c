package tasks_test

import (
	"fmt"
	"time"

	"github.com/july/template/core/tasks"
)

// A worker claims a batch task, records per-item results, and completes it
// with one failed item: partial success is Completed with failed_count > 0.
func Example() {
	now := time.Date(2030, 1, 1, 8, 0, 0, 0, time.UTC)

	task, _ := tasks.NewTask("task-42", 3, now)
	if wait, ok := tasks.PollHint(task.Status, 0); ok {
		fmt.Println("Retry-After:", tasks.RetryAfterSeconds(wait))
	}

	task, _ = task.Claim("worker-1", now, time.Minute)
	token := task.Lease.Token
	task, _ = task.RecordProgress("worker-1", token, 2, 1, now.Add(time.Second))
	task, err := task.Complete("worker-1", token, now.Add(2*time.Second))
	fmt.Println("complete error:", err)

	v := task.View()
	fmt.Println(v.Status, v.StatusName, v.SuccessCount, v.FailedCount, v.Progress)

	_, again := task.Complete("worker-1", token, now.Add(3*time.Second))
	fmt.Println(again)

	_, polling := tasks.PollHint(task.Status, 3)
	fmt.Println("keep polling:", polling)
	// Output:
	// Retry-After: 2
	// complete error: <nil>
	// completed 已完成 2 1 100
	// finish task "task-42" as completed: task status cannot move from completed to completed: completed is terminal
	// keep polling: false
}

// A summary that leaks internals is refused; the catalogue supplies a safe one.
func ExampleNewSummary() {
	_, err := tasks.NewSummary("TASK_INFRA_UNAVAILABLE", "dial tcp 10.0.0.5:5432: connection refused")
	fmt.Println(err)
	fmt.Println(tasks.SummaryFor(tasks.CodeInfraUnavailable).Message)
	// Output:
	// invalid task failure summary "TASK_INFRA_UNAVAILABLE": message contains an IP address; use a catalogue summary (SummaryFor) instead
	// 依赖服务暂时不可用，任务未能完成，请稍后重新提交。
}
