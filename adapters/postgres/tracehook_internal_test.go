package postgres

import "testing"

// The table goes into the span name only when the statement works on
// exactly one; anything else leaves the operation alone.
func TestCollection(t *testing.T) {
	for _, c := range []struct{ op, query, want string }{
		{"SELECT", `SELECT "e"."id" FROM "tb_outbox_event" AS "e" WHERE ("e"."status" = 1) LIMIT 10`, "tb_outbox_event"},
		{"SELECT", "SELECT id\nFROM tb_outbox_event\nWHERE id = 1 FOR UPDATE SKIP LOCKED", "tb_outbox_event"},
		{"SELECT", `SELECT 1 FROM public.tb_system_config`, "public.tb_system_config"},
		{"SELECT", `SELECT a.id FROM tb_a a JOIN tb_b b ON a.id = b.id`, ""},
		{"SELECT", `SELECT * FROM tb_a, tb_b`, ""},
		{"SELECT", `SELECT * FROM tb_a AS a, tb_b`, ""},
		{"SELECT", `SELECT * FROM tb_a WHERE id IN (SELECT id FROM tb_b)`, ""},
		{"SELECT", `SELECT * FROM unnest(ARRAY[1,2])`, ""},
		{"SELECT", `SELECT 1`, ""},
		{"SELECT", `SELECT 'x FROM y'`, ""},
		{"UPDATE", `UPDATE "tb_outbox_event" AS "e" SET status = 3 WHERE id = 1`, "tb_outbox_event"},
		{"UPDATE", `UPDATE ONLY tb_outbox_event SET status = 3`, "tb_outbox_event"},
		{"INSERT", `INSERT INTO "tb_outbox_event" ("event_id") VALUES ('x') RETURNING "id"`, "tb_outbox_event"},
		{"DELETE", `DELETE FROM tb_idempotency WHERE expires_at < now()`, "tb_idempotency"},
		{"DELETE", `DELETE FROM tb_a USING tb_b WHERE tb_a.id = tb_b.id`, ""},
		{"WITH", `WITH c AS (SELECT id FROM tb_a) UPDATE tb_a SET x = 1 FROM c`, ""},
		{"BEGIN", `BEGIN`, ""},
		{"INSERT", `INSERT INTO "tb_ü" VALUES (1)`, ""},
		{"SELECT", `SELECT 'ıı' FROM tb_a`, "tb_a"},
	} {
		if got := collection(c.op, c.query); got != c.want {
			t.Errorf("collection(%q, %q) = %q, want %q", c.op, c.query, got, c.want)
		}
	}
}
