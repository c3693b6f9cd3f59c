package release

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/migrations"
)

// FoundationName is the Set name of the foundation's own migrations.
const FoundationName = "foundation"

// Foundation returns the set that owns tb_outbox_event, tb_system_config
// and tb_backfill_checkpoint, with their invariants and smoke test.
func Foundation() Set {
	return Set{
		Name:  FoundationName,
		FS:    migrations.FS,
		Rules: foundationRules,
		Smoke: foundationSmoke,
	}
}

// The outbox grows without bound, so no rule may read all of it: the
// status rules read the partial indexes (status = 1, 2, 3, 4), and a rule
// whose count a validated constraint already guarantees to be zero reads
// the catalog instead (unlessGuaranteed). Finding codes are unchanged.
var foundationRules = []Rule{
	{Name: "outbox_status_out_of_range", Table: "tb_outbox_event",
		SQL: unlessGuaranteed(constraintHolds("ck_outbox_event_status", "CHECK (((status >= 1) AND (status <= 4)))")+" AND "+notNull("status"),
			`SELECT count(*) FROM tb_outbox_event WHERE status IS NULL OR status NOT BETWEEN 1 AND 4`),
		Message: "outbox rows with a status outside 1..4; fix them forward before releasing"},
	{Name: "outbox_delivering_without_lease", Table: "tb_outbox_event",
		SQL:     `SELECT count(*) FROM tb_outbox_event WHERE status = 2 AND (lease_owner IS NULL OR lease_expires_at IS NULL)`,
		Message: "outbox rows in delivering without a lease owner or expiry"},
	{Name: "outbox_delivered_without_time", Table: "tb_outbox_event",
		SQL:     `SELECT count(*) FROM tb_outbox_event WHERE status = 3 AND delivered_at IS NULL`,
		Message: "outbox rows delivered without delivered_at"},
	{Name: "outbox_payload_not_object", Table: "tb_outbox_event",
		SQL: unlessGuaranteed(constraintHolds("ck_outbox_event_payload_object", "CHECK ((jsonb_typeof(payload) = 'object'::text))")+" AND "+notNull("payload"),
			`SELECT count(*) FROM tb_outbox_event WHERE payload IS NULL OR jsonb_typeof(payload) <> 'object'`),
		Message: "outbox payloads that are not JSON objects"},
	{Name: "outbox_event_id_duplicate", Table: "tb_outbox_event",
		SQL: unlessGuaranteed(uniqueHolds("uq_outbox_event_event_id", "UNIQUE (event_id)"),
			`SELECT count(*) FROM (SELECT event_id FROM tb_outbox_event GROUP BY event_id HAVING count(*) > 1) d`),
		Message: "event_id values held by more than one outbox row"},
	{Name: "config_value_type_illegal", Table: "tb_system_config",
		SQL:     `SELECT count(*) FROM tb_system_config WHERE value_type IS NULL OR value_type NOT IN ('string', 'int', 'bool', 'json')`,
		Message: "config rows with a value_type outside string|int|bool|json"},
	{Name: "config_key_malformed", Table: "tb_system_config",
		SQL:     `SELECT count(*) FROM tb_system_config WHERE config_key IS NULL OR config_key !~ '^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$'`,
		Message: "config keys not of the form module.group.name"},
	{Name: "config_key_duplicate", Table: "tb_system_config",
		SQL:     `SELECT count(*) FROM (SELECT config_key FROM tb_system_config GROUP BY config_key HAVING count(*) > 1) d`,
		Message: "config keys stored more than once"},
	{Name: "config_version_invalid", Table: "tb_system_config",
		SQL:     `SELECT count(*) FROM tb_system_config WHERE version IS NULL OR version < 1`,
		Message: "config rows with a version below 1"},
	{Name: "outbox_undelivered", Table: "tb_outbox_event", Warn: true, Strict: true,
		// Two counts, so each is read from its partial index (status = 1, status = 2).
		SQL:     `SELECT (SELECT count(*) FROM tb_outbox_event WHERE status = 1) + (SELECT count(*) FROM tb_outbox_event WHERE status = 2)`,
		Message: "outbox events not yet delivered (pending or delivering); keep the relay running across the release"},
	{Name: "outbox_expired_leases", Table: "tb_outbox_event", Warn: true, Strict: true,
		SQL:     `SELECT count(*) FROM tb_outbox_event WHERE status = 2 AND lease_expires_at < now()`,
		Message: "outbox leases past their expiry; the relay recovers them, many mean relays are crashing"},
	{Name: "outbox_long_lease", Table: "tb_outbox_event", Warn: true, Strict: true,
		SQL:     `SELECT count(*) FROM tb_outbox_event WHERE status = 2 AND lease_expires_at > now() AND updated_at < now() - interval '10 minutes'`,
		Message: "outbox rows leased for more than 10 minutes and still held; a relay is stuck: check it, or release its leases with `relay outbox release-leases`"},
	{Name: "outbox_failed", Table: "tb_outbox_event", Warn: true,
		SQL:     `SELECT count(*) FROM tb_outbox_event WHERE status = 4`,
		Message: "outbox events that failed for good; replay them with the relay's operator command"},
}

// foundationSmoke writes and reads back one row per table. The rows use
// negative ids with OVERRIDING SYSTEM VALUE so even the identity sequences
// stay untouched when the transaction rolls back.
func foundationSmoke(ctx context.Context, tx bun.Tx) error {
	steps := []struct{ what, sql string }{
		{"insert outbox", `INSERT INTO tb_outbox_event (id, event_id, event_type, payload_version, aggregate_type, aggregate_id,
			resource_type, resource_id, request_id, correlation_id, payload)
			OVERRIDING SYSTEM VALUE
			VALUES (-1, gen_random_uuid(), 'migrate.smoke', 1, 'smoke', '1', 'smoke', '1', 'smoke', 'smoke', '{}')`},
		{"claim outbox", `UPDATE tb_outbox_event SET status = 2, lease_owner = 'migrate', lease_token = lease_token + 1,
			lease_expires_at = now() + interval '1 minute' WHERE id = -1 AND status = 1`},
		{"insert config", `INSERT INTO tb_system_config (id, config_key, config_value, value_type, module)
			OVERRIDING SYSTEM VALUE VALUES (-1, 'migrate.smoke.probe', '1', 'int', 'migrate')`},
		{"update config", `UPDATE tb_system_config SET config_value = '2', version = version + 1 WHERE id = -1 AND version = 1`},
	}
	for _, s := range steps {
		res, err := tx.ExecContext(ctx, s.sql)
		if err != nil {
			return fmt.Errorf("smoke %s: %w", s.what, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("smoke %s: %d rows affected, want 1", s.what, n)
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tb_outbox_event o, tb_system_config c
		WHERE o.id = -1 AND o.status = 2 AND c.id = -1 AND c.version = 2`).Scan(&n); err != nil {
		return fmt.Errorf("smoke read back: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("smoke read back: %d rows, want 1", n)
	}
	return nil
}

// unlessGuaranteed returns a rule query that is 0, read from the catalog
// alone, while guarantee holds, and otherwise runs count. The scalar
// subquery of the ELSE branch is evaluated only when reached, so a
// validated constraint costs no table read; a missing, NOT VALID or
// drifted one (reported as schema_drift too) falls back to counting.
func unlessGuaranteed(guarantee, count string) string {
	return `SELECT CASE WHEN ` + guarantee + ` THEN 0 ELSE (` + count + `) END`
}

// constraintHolds is true while the outbox has constraint name, validated,
// with exactly the definition def.
func constraintHolds(name, def string) string {
	return fmt.Sprintf(`EXISTS (SELECT 1 FROM pg_constraint WHERE conname = %s AND conrelid = to_regclass('tb_outbox_event')
		AND convalidated AND pg_get_constraintdef(oid) = %s)`, sqlString(name), sqlString(def))
}

// uniqueHolds is true while the outbox has unique constraint name, defined
// as def, over a valid index.
func uniqueHolds(name, def string) string {
	return fmt.Sprintf(`EXISTS (SELECT 1 FROM pg_constraint k JOIN pg_index i ON i.indexrelid = k.conindid
		WHERE k.conname = %s AND k.conrelid = to_regclass('tb_outbox_event') AND k.contype = 'u'
		AND pg_get_constraintdef(k.oid) = %s AND i.indisvalid)`, sqlString(name), sqlString(def))
}

// notNull is true while the outbox column is NOT NULL.
func notNull(column string) string {
	return fmt.Sprintf(`EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('tb_outbox_event') AND attname = %s AND attnotnull)`,
		sqlString(column))
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
