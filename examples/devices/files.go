package devices

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/schedule"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/periodic"
	"github.com/july/template/core/ports"
)

// KeyFileRetentionHours is how long a finished task (已完成, 已失败,
// 已取消) keeps its uploaded file; then the file sweep drops the bytes.
// The task, its counts and its failure details stay.
const KeyFileRetentionHours = "devices.upload.file_retention_hours"

// DefaultFileRetentionHours is KeyFileRetentionHours' default (7 days).
const DefaultFileRetentionHours = 168

// The file sweep: an hourly periodic command whose consumer purges.
const (
	FileSweepCommand  = "devices.file_sweep"
	EventFileSweepDue = "devices.file_sweep.due"
	FileSweepConsumer = "devices-file-sweep"
)

// fileSweepBatch bounds the rows one statement of the sweep changes.
const fileSweepBatch = 500

// FileSweepDue is the payload of EventFileSweepDue.
type FileSweepDue struct {
	ScheduledAt time.Time `json:"scheduled_at"`
}

// FileSweepCommandDecl is the hourly file sweep.
func FileSweepCommandDecl() periodic.Command {
	return periodic.Command{
		Name:     FileSweepCommand,
		Schedule: schedule.MustCron("17 * * * *", time.UTC),
		CatchUp:  periodic.Once,
		Event: func(o periodic.Occurrence) (outbox.NewParams, error) {
			return outbox.NewParams{
				EventType: EventFileSweepDue, PayloadVersion: 1,
				AggregateType: "device_file_sweep", AggregateID: FileSweepCommand,
				ResourceType: "device_file_sweep", ResourceID: o.ID,
				Payload: FileSweepDue{ScheduledAt: o.At},
			}, nil
		},
	}
}

// PurgeFiles drops the uploaded file of every task that finished before
// cutoff (the column keeps a one-byte placeholder, as before the upload
// stored it), in batches; it returns how many it purged. A purge is
// idempotent: a purged file is not counted again.
func PurgeFiles(ctx context.Context, db bun.IDB, cutoff time.Time) (int64, error) {
	const q = `UPDATE ex_devices_task SET file_content = '\x00'::bytea
WHERE id IN (SELECT id FROM ex_devices_task
	WHERE status IN (3, 4, 5) AND finished_at < ? AND octet_length(file_content) > 1
	LIMIT ?)`
	var total int64
	for {
		res, err := db.ExecContext(ctx, q, cutoff, fileSweepBatch)
		if err != nil {
			return total, fmt.Errorf("purge files of finished tasks: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
		if n < fileSweepBatch {
			return total, nil
		}
	}
}

// fileSweeper is the consumer of EventFileSweepDue.
type fileSweeper struct {
	db     *bun.DB
	clock  ports.Clock
	config ConfigReader
}

func (f *fileSweeper) consumer() queue.Consumer {
	return queue.Consumer{EventType: EventFileSweepDue, Name: FileSweepConsumer, Handler: queue.Handle(f.sweep)}
}

// sweep purges against the configured retention. It needs no consumption
// record: a second run of the same occurrence purges nothing new.
func (f *fileSweeper) sweep(ctx context.Context, _ outbox.Envelope, _ FileSweepDue) error {
	hours, err := configured(ctx, f.config, KeyFileRetentionHours, DefaultFileRetentionHours)
	if err != nil {
		return err
	}
	clock := cmp.Or[ports.Clock](f.clock, ports.SystemClock)
	_, err = PurgeFiles(ctx, f.db, clock.Now().Add(-time.Duration(hours)*time.Hour))
	return err
}
