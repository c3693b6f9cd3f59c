package pgconfig

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// Store is ports.ConfigStore on tb_system_config. Apply is a
// compare-and-set on the version column, so any number of replicas may
// update concurrently: per base version exactly one wins.
type Store struct {
	db    *bun.DB
	audit pgoutbox.AuditWriter
}

var _ ports.ConfigStore = (*Store)(nil)

// NewStore returns a Store on db that writes audit records through audit
// (pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}) in the default
// wiring; the audit team's writer once it exists).
func NewStore(db *bun.DB, audit pgoutbox.AuditWriter) (*Store, error) {
	switch {
	case db == nil:
		return nil, errors.New("pgconfig: NewStore needs a db; pass the *bun.DB from postgres.Open")
	case audit == nil:
		return nil, errors.New("pgconfig: NewStore needs a pgoutbox.AuditWriter; pass pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{})")
	}
	return &Store{db: db, audit: audit}, nil
}

// configColumns are the columns every read returns, in configRow order.
const configColumns = `config_key, config_value, value_type, module, description, readonly, version, updated_by, updated_at`

// configRow is one scanned tb_system_config row.
type configRow struct {
	Key         string    `bun:"config_key"`
	Value       string    `bun:"config_value"`
	Type        string    `bun:"value_type"`
	Module      string    `bun:"module"`
	Description string    `bun:"description"`
	ReadOnly    bool      `bun:"readonly"`
	Version     int64     `bun:"version"`
	UpdatedBy   string    `bun:"updated_by"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

func (r configRow) stored() sysconfig.Stored {
	return sysconfig.Stored{
		Key: r.Key, Value: r.Value, Type: sysconfig.Type(r.Type), Module: r.Module,
		Description: r.Description, ReadOnly: r.ReadOnly, Version: r.Version,
		UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt.UTC(), // pgx reads timestamptz in the process's zone; the API shows UTC
	}
}

// Get implements ports.ConfigStore. It returns an error wrapping
// ports.ErrNotFound when key has no row.
func (s *Store) Get(ctx context.Context, key string) (sysconfig.Stored, error) {
	var row configRow
	err := s.db.NewRaw(`SELECT `+configColumns+` FROM tb_system_config WHERE config_key = ?`, key).Scan(ctx, &row)
	if err != nil {
		return sysconfig.Stored{}, fmt.Errorf("get config %q: %w", key, pgerr.Translate(err))
	}
	return row.stored(), nil
}

// List implements ports.ConfigStore.
func (s *Store) List(ctx context.Context, module string) ([]sysconfig.Stored, error) {
	var rows []configRow
	err := s.db.NewRaw(`SELECT `+configColumns+` FROM tb_system_config
		WHERE ? = '' OR module = ? ORDER BY config_key`, module, module).Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("list config of module %q: %w", module, pgerr.Translate(err))
	}
	out := make([]sysconfig.Stored, len(rows))
	for i, r := range rows {
		out[i] = r.stored()
	}
	return out, nil
}

// Apply implements ports.ConfigStore: the compare-and-set write and the
// audit record share one transaction. A lost compare-and-set returns a
// *sysconfig.VersionConflictError (unwrapped) carrying the version read
// back in the same transaction; an audit error rolls the row back.
// audit.At defaults to now.
func (s *Store) Apply(ctx context.Context, plan sysconfig.Plan, audit ports.AuditRecord, now time.Time) (sysconfig.Stored, error) {
	if plan.NewVersion != plan.BaseVersion+1 {
		return sysconfig.Stored{}, fmt.Errorf("apply config %q: plan goes from version %d to %d; build plans with sysconfig.PlanUpdate",
			plan.Spec.Key, plan.BaseVersion, plan.NewVersion)
	}
	if audit.At.IsZero() {
		audit.At = now
	}
	want := plan.Row(now)
	var out sysconfig.Stored
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row, err := writeConfig(ctx, tx, want, plan.BaseVersion)
		if err != nil {
			return err
		}
		if err := s.audit.WriteAudit(ctx, tx, audit); err != nil {
			return fmt.Errorf("apply config %q: %w", want.Key, err)
		}
		out = row
		return nil
	})
	if err != nil {
		return sysconfig.Stored{}, pgerr.Translate(err) // BEGIN/COMMIT failures; a conflict stays unwrapped
	}
	return out, nil
}

// writeConfig inserts (base 0) or updates (WHERE version = base) the row and
// returns it as stored, or a *sysconfig.VersionConflictError when the
// compare-and-set matched nothing.
func writeConfig(ctx context.Context, tx bun.Tx, r sysconfig.Stored, base int64) (sysconfig.Stored, error) {
	var q *bun.RawQuery
	if base == 0 {
		q = tx.NewRaw(`INSERT INTO tb_system_config (config_key, config_value, value_type, module, description,
			readonly, version, created_by, updated_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (config_key) DO NOTHING RETURNING `+configColumns,
			r.Key, r.Value, string(r.Type), r.Module, r.Description,
			r.ReadOnly, r.Version, r.UpdatedBy, r.UpdatedBy, r.UpdatedAt, r.UpdatedAt)
	} else {
		q = tx.NewRaw(`UPDATE tb_system_config SET config_value = ?, version = ?, value_type = ?, module = ?,
			description = ?, readonly = ?, updated_by = ?, updated_at = ?
			WHERE config_key = ? AND version = ? RETURNING `+configColumns,
			r.Value, r.Version, string(r.Type), r.Module,
			r.Description, r.ReadOnly, r.UpdatedBy, r.UpdatedAt,
			r.Key, base)
	}
	var row configRow
	err := q.Scan(ctx, &row)
	switch {
	case err == nil:
		return row.stored(), nil
	case !errors.Is(err, sql.ErrNoRows):
		return sysconfig.Stored{}, fmt.Errorf("write config %q at version %d: %w", r.Key, base, pgerr.Translate(err))
	}
	actual, err := currentVersion(ctx, tx, r.Key)
	if err != nil {
		return sysconfig.Stored{}, err
	}
	return sysconfig.Stored{}, &sysconfig.VersionConflictError{Key: r.Key, Expected: base, Actual: actual}
}

// currentVersion reads the committed version of key; 0 when it has no row.
func currentVersion(ctx context.Context, tx bun.Tx, key string) (int64, error) {
	var v int64
	err := tx.NewRaw(`SELECT version FROM tb_system_config WHERE config_key = ?`, key).Scan(ctx, &v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read version of config %q: %w", key, pgerr.Translate(err))
	}
	return v, nil
}

// RecordRejected implements ports.ConfigStore: the record is written in its
// own short transaction through the AuditWriter.
func (s *Store) RecordRejected(ctx context.Context, audit ports.AuditRecord) error {
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return s.audit.WriteAudit(ctx, tx, audit)
	})
	if err != nil {
		return fmt.Errorf("record rejected %s of %s %s: %w", audit.Action, audit.ResourceType, audit.ResourceID, pgerr.Translate(err))
	}
	return nil
}
