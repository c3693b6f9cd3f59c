package tasks

import (
	"errors"
	"fmt"
)

// ErrInvalidStatus is returned when a stored or requested status is not one
// of the five task states.
var ErrInvalidStatus = errors.New("invalid task status")

// Status is a task's public lifecycle state, stored as a smallint. Partial
// success is Completed with Counts.Failed > 0; there is no sixth state.
type Status int16

const (
	// Pending (待处理) is a task waiting for a worker to claim it.
	Pending Status = 1
	// Processing (处理中) is a task held by a worker under a lease.
	Processing Status = 2
	// Completed (已完成) is a task whose every item was decided, successfully
	// or not. Success+Failed equals Total.
	Completed Status = 3
	// Failed (已失败) is a task that as a whole could not reach its end.
	Failed Status = 4
	// Cancelled (已取消) is a task stopped on request, where the business
	// supports cancelling.
	Cancelled Status = 5
)

// Statuses lists the five states in numeric order.
func Statuses() []Status { return []Status{Pending, Processing, Completed, Failed, Cancelled} }

// ParseStatus converts a stored integer to a Status. It returns
// ErrInvalidStatus for anything outside 1..5.
func ParseStatus(v int) (Status, error) {
	if v < int(Pending) || v > int(Cancelled) {
		return 0, fmt.Errorf("parse task status %d: %w (want 1..5)", v, ErrInvalidStatus)
	}
	return Status(v), nil
}

// Valid reports whether s is one of the five states.
func (s Status) Valid() bool { return s >= Pending && s <= Cancelled }

// Terminal reports whether s is an end state (Completed, Failed, Cancelled).
// A terminal task never changes status again.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Name returns the Chinese name shown to users as status_name, or "未知状态"
// for an invalid status.
func (s Status) Name() string {
	switch s {
	case Pending:
		return "待处理"
	case Processing:
		return "处理中"
	case Completed:
		return "已完成"
	case Failed:
		return "已失败"
	case Cancelled:
		return "已取消"
	}
	return "未知状态"
}

// String returns the English name for logs and error messages.
func (s Status) String() string {
	switch s {
	case Pending:
		return "pending"
	case Processing:
		return "processing"
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case Cancelled:
		return "cancelled"
	}
	return fmt.Sprintf("Status(%d)", int16(s))
}
