package pgtasks

import (
	"fmt"
	"regexp"
	"time"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/tasks"
)

// Columns are the five-state task contract columns. A business embeds
// them in the bun model of its OWN task table (there is no universal task
// table) and creates them with ColumnsSQL in its own migration:
//
//	type ExportTask struct {
//		bun.BaseModel `bun:"table:tb_export_task"`
//		ID            string `bun:"id,pk"`
//		pgtasks.Columns
//		FileName      string `bun:"file_name"` // business columns
//	}
//
// Only a Store changes them after insert, so the status, counts and
// lease rules hold. Column names are part of the contract.
type Columns struct {
	Status         tasks.Status `bun:"status,notnull"`
	TotalCount     int64        `bun:"total_count,notnull"`
	SuccessCount   int64        `bun:"success_count,notnull"`
	FailedCount    int64        `bun:"failed_count,notnull"`
	LeaseOwner     string       `bun:"lease_owner,nullzero"`
	LeaseToken     int64        `bun:"lease_token,notnull"`
	LeaseExpiresAt time.Time    `bun:"lease_expires_at,nullzero"`
	StartedAt      time.Time    `bun:"started_at,nullzero"`
	FinishedAt     time.Time    `bun:"finished_at,nullzero"`
	UpdatedAt      time.Time    `bun:"updated_at,notnull"`
	CreatedAt      time.Time    `bun:"created_at,notnull"`
	ErrorCode      string       `bun:"error_code,nullzero"`
	ErrorMessage   string       `bun:"error_message,nullzero"`
}

// NewColumns returns the columns of a new Pending task with total
// items, for a business that inserts its task row (with its own columns) in
// its own transaction instead of calling Store.Create. It applies
// tasks.NewTask's rules and returns tasks.ErrInvalidTask for a negative total.
func NewColumns(total int64, now time.Time) (Columns, error) {
	t, err := tasks.NewTask("new", total, now)
	if err != nil {
		return Columns{}, err
	}
	return Columns{Status: t.Status, TotalCount: total, UpdatedAt: now, CreatedAt: now}, nil
}

// Task converts the columns of the row with id to the core task, times in
// UTC, so business code can apply core rules or render Task.View.
func (c *Columns) Task(id string) tasks.Task {
	t := tasks.Task{
		ID:     id,
		Status: c.Status,
		Counts: tasks.Counts{Total: c.TotalCount, Success: c.SuccessCount, Failed: c.FailedCount},
		Lease: lease.Lease{
			Owner: c.LeaseOwner, Token: c.LeaseToken, ExpiresAt: utcOrZero(c.LeaseExpiresAt),
		},
		UpdatedAt: c.UpdatedAt.UTC(),
	}
	if c.ErrorCode != "" {
		t.Summary = &tasks.Summary{Code: c.ErrorCode, Message: c.ErrorMessage}
	}
	if !c.StartedAt.IsZero() {
		at := c.StartedAt.UTC()
		t.StartedAt = &at
	}
	if !c.FinishedAt.IsZero() {
		at := c.FinishedAt.UTC()
		t.FinishedAt = &at
	}
	return t
}

// ColumnsSQL is the column and constraint list a business pastes into
// the CREATE TABLE of its task table, after its id column. The CHECKs keep
// every writer honest: status 1..5, non-negative counts, success+failed <=
// total, success+failed = total once Completed (3), and a lease exactly
// while Processing (2). Failure details stay in the business's own item
// table.
const ColumnsSQL = `status            smallint     NOT NULL DEFAULT 1,
    total_count       bigint       NOT NULL DEFAULT 0,
    success_count     bigint       NOT NULL DEFAULT 0,
    failed_count      bigint       NOT NULL DEFAULT 0,
    lease_owner       text         NULL,
    lease_token       bigint       NOT NULL DEFAULT 0,
    lease_expires_at  timestamptz  NULL,
    started_at        timestamptz  NULL,
    finished_at       timestamptz  NULL,
    updated_at        timestamptz  NOT NULL DEFAULT now(),
    created_at        timestamptz  NOT NULL DEFAULT now(),
    error_code        varchar(64)  NULL,
    error_message     text         NULL,
    CONSTRAINT ck_task_status CHECK (status BETWEEN 1 AND 5),
    CONSTRAINT ck_task_counts_non_negative CHECK (total_count >= 0 AND success_count >= 0 AND failed_count >= 0),
    CONSTRAINT ck_task_counts_within_total CHECK (success_count + failed_count <= total_count),
    CONSTRAINT ck_task_completed_counts CHECK (status <> 3 OR success_count + failed_count = total_count),
    CONSTRAINT ck_task_lease_when_processing CHECK ((status = 2) = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))`

// taskTableName is what NewStore and TableDDL accept: a plain lowercase
// identifier short enough that "<table>_expiring_idx" fits Postgres's 63
// bytes.
var taskTableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,49}$`)

func checkTaskTable(table string) error {
	if !taskTableName.MatchString(table) {
		return fmt.Errorf("pgtasks: task table %q must match %s", table, taskTableName)
	}
	return nil
}

// TableDDL returns a complete CREATE TABLE for a task table with a text
// id and only the contract columns, plus the partial index RecoverExpired
// scans. It is what the tests use and a starting point for a business
// migration, which copies it and adds its own columns; the business owns
// that table and migration. It returns an error for a name NewStore
// would refuse.
func TableDDL(table string) (string, error) {
	if err := checkTaskTable(table); err != nil {
		return "", err
	}
	return fmt.Sprintf(`CREATE TABLE %[1]q (
    id                text         PRIMARY KEY,
    %[2]s
);
CREATE INDEX %[3]q ON %[1]q (lease_expires_at) WHERE status = 2;`, table, ColumnsSQL, table+"_expiring_idx"), nil
}

func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
