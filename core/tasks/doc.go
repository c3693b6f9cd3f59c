// Package tasks holds the pure rules of the five-state asynchronous task
// contract shared by every business task table (batch orders, device
// assignment, exports, ...).
//
// A task is Pending (待处理), Processing (处理中), Completed (已完成), Failed
// (已失败) or Cancelled (已取消). Partial success is Completed with
// Counts.Failed > 0; there is no sixth state. Completed means the task reached
// its business end (every item was decided); Failed means the task as a whole
// could not get there (unparsable file, infrastructure down, ...).
//
// Business packages keep their own task and item tables. They load a row into
// a Task value, call one of its methods (Claim, RecordProgress, Complete,
// Fail, Cancel, RecoverExpired) and persist the result with a conditional
// update on the previous status, lease owner and fencing token. The methods
// never read a clock: now always comes in as an argument.
//
// The HTTP view of every task is View, with a Retry-After hint from PollHint
// while the task is not terminal.
package tasks
