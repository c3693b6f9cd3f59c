package tasks

import "time"

// View is the one JSON shape every task endpoint returns. Every key is always
// present: error_summary, started_at and finished_at are null until set, so
// clients never have to tell "missing" from "empty".
type View struct {
	TaskID       string     `json:"task_id"`
	Status       Status     `json:"status"`
	StatusName   string     `json:"status_name"`
	TotalCount   int64      `json:"total_count"`
	SuccessCount int64      `json:"success_count"`
	FailedCount  int64      `json:"failed_count"`
	Progress     int        `json:"progress"` // integer percent 0..100, see Counts.Progress
	ErrorSummary *Summary   `json:"error_summary"`
	StartedAt    *time.Time `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

// View returns the public view of t. The lease is never exposed.
func (t Task) View() View {
	v := View{
		TaskID:       t.ID,
		Status:       t.Status,
		StatusName:   t.Status.Name(),
		TotalCount:   t.Counts.Total,
		SuccessCount: t.Counts.Success,
		FailedCount:  t.Counts.Failed,
		Progress:     t.Counts.Progress(t.Status),
		StartedAt:    t.StartedAt,
		FinishedAt:   t.FinishedAt,
		UpdatedAt:    t.UpdatedAt,
	}
	if t.Summary != nil {
		s := *t.Summary // copy so the view cannot alias the task
		v.ErrorSummary = &s
	}
	return v
}
