package devices

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgtasks"
)

// TaskTable is the task table's name, as pgtasks.NewStore takes it.
const TaskTable = "ex_devices_task"

// taskRecord is the row the create handler inserts: the upload, its owner,
// the five-state contract columns and the create command's idempotency
// record, all committed together.
type taskRecord struct {
	bun.BaseModel `bun:"table:ex_devices_task"`

	ID           string `bun:"id,pk"`
	OwnerSubject string `bun:"owner_subject,notnull"`
	// AssignAny records that the uploader held RoleAdmin: the worker
	// applies its rows to any agent and over other agents' devices.
	// False: the RoleAgent rules.
	AssignAny bool   `bun:"assign_any,notnull"`
	FileName  string `bun:"file_name,notnull"`
	// FileContent is the uploaded CSV. A real service would upload it to
	// object storage after the request and keep the object key here.
	FileContent []byte `bun:"file_content,type:bytea,notnull"`
	pgtasks.Columns
	pgidem.Record
}

// taskHead is a task without its file, for reads by the API.
type taskHead struct {
	bun.BaseModel `bun:"table:ex_devices_task"`

	ID           string `bun:"id,pk"`
	OwnerSubject string `bun:"owner_subject"`
	pgtasks.Columns
}

// failureRecord is one row that could not be applied.
type failureRecord struct {
	bun.BaseModel `bun:"table:ex_devices_failure"`

	ID        int64     `bun:"id,pk,autoincrement"`
	TaskID    string    `bun:"task_id,notnull"`
	RowNo     int       `bun:"row_no,notnull"`
	DeviceSN  string    `bun:"device_sn,notnull"`
	Code      string    `bun:"code,notnull"`
	Message   string    `bun:"message,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// assignmentRecord is the business fact: the agent a device belongs to.
type assignmentRecord struct {
	bun.BaseModel `bun:"table:ex_devices_assignment"`

	DeviceSN  string    `bun:"device_sn,pk"`
	AgentID   string    `bun:"agent_id,notnull"`
	TaskID    string    `bun:"task_id,notnull"`
	RowNo     int       `bun:"row_no,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}
