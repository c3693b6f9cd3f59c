package release

import (
	"fmt"
	"regexp"
	"strings"
)

// Lint codes: operations that lock or rewrite a table that already exists
// (in production, a hot one), each with the safe alternative. A finding is
// a violation unless the statement is preceded by
// "-- migrate:allow CODE: reason", which turns it into a warning that
// records the reason.
const (
	LintVolatileDefault    = "lint_volatile_default"
	LintColumnType         = "lint_column_type_change"
	LintIndexNotConcurrent = "lint_index_not_concurrent"
	LintSetNotNull         = "lint_set_not_null"
	LintDropColumn         = "lint_drop_column"
	LintConstraintScan     = "lint_constraint_validates_rows"
)

// lintAdvice is each code's explanation and safe alternative, in English
// and Chinese.
var lintAdvice = map[string]string{
	LintVolatileDefault: "adding a column with a volatile default (or a stored generated column) rewrites the whole table under an ACCESS EXCLUSIVE lock; " +
		"add the column without a default, backfill it in batches, then set the default / 添加带易变默认值（或存储生成列）的列会在排他锁下重写整表；请先加无默认值的列，分批回填，再设置默认值",
	LintColumnType: "ALTER COLUMN TYPE rewrites the table and blocks reads and writes; add a new column, backfill it, switch the code, drop the old column in a later release / " +
		"修改列类型会重写整表并阻塞读写；请新增列、回填、切换代码，下个版本再删除旧列",
	LintIndexNotConcurrent: "CREATE INDEX without CONCURRENTLY blocks writes for the whole build; create it with CREATE INDEX CONCURRENTLY in a migration file without .tx " +
		"(for a unique constraint: CREATE UNIQUE INDEX CONCURRENTLY, then ADD CONSTRAINT ... USING INDEX) / 非并发建索引会在整个构建期间阻塞写入；请在不带 .tx 的迁移文件中使用 CREATE INDEX CONCURRENTLY",
	LintSetNotNull: "SET NOT NULL scans the whole table under an ACCESS EXCLUSIVE lock; first ADD CONSTRAINT ... CHECK (col IS NOT NULL) NOT VALID, VALIDATE it in a later migration, then SET NOT NULL / " +
		"SET NOT NULL 会在排他锁下扫描整表；请先添加 NOT VALID 的 CHECK (col IS NOT NULL) 约束，下个迁移中 VALIDATE，再 SET NOT NULL",
	LintDropColumn: "dropping a column breaks the running version that still reads or writes it; stop using it in one release and drop it in the next / " +
		"删除列会使仍在运行的旧版本出错；请先发布不再使用该列的版本，下个版本再删除",
	LintConstraintScan: "adding a CHECK or FOREIGN KEY constraint validates every row under a lock that blocks writes; add it NOT VALID and VALIDATE CONSTRAINT in a later migration / " +
		"添加 CHECK 或外键约束会在阻塞写入的锁下校验所有行；请先以 NOT VALID 添加，下个迁移再 VALIDATE CONSTRAINT",
}

// reVolatile finds volatile functions in a default expression.
var reVolatile = regexp.MustCompile(`\b(random|gen_random_uuid|uuid_generate_v[14]|clock_timestamp|timeofday|nextval|txid_current)\(`)

// lint checks what one statement of a pending migration did to tables that
// existed before the migration: those hold rows in production.
func lint(m migration, st Statement, existed map[string]bool, before Catalog, d Change) []Finding {
	var out []Finding
	flag := func(code, object string) {
		msg := fmt.Sprintf("line %d: %s", st.Line, lintAdvice[code])
		if reason, ok := st.Allow[code]; ok {
			out = append(out, Finding{Severity: SeverityWarning, Code: code, Object: object, Count: 1,
				Message: fmt.Sprintf("allowed in migration %s line %d: %s", m.Version, st.Line, reason)})
			return
		}
		out = append(out, Finding{Severity: SeverityViolation, Code: code, Object: object, Count: 1,
			Message: fmt.Sprintf("migration %s %s (suppress with \"-- %s %s: reason\" before the statement)", m.Version, msg, AllowDirective, code)})
	}
	onExisting := func(o Object) bool { return o.Table != "" && existed[o.Table] }
	for _, k := range sortedKeys(d.Created) {
		o := d.Created[k]
		if !onExisting(o) {
			continue
		}
		kind, _, _ := strings.Cut(k, ":")
		switch {
		case kind == KindColumn && (reVolatile.MatchString(o.Def) || strings.HasSuffix(o.Def, ") stored")):
			flag(LintVolatileDefault, k)
		case kind == KindIndex && !reConcurrently.MatchString(st.SQL):
			flag(LintIndexNotConcurrent, k)
		case kind == KindConstraint && !o.Invalid && (strings.HasPrefix(o.Def, "CHECK ") || strings.HasPrefix(o.Def, "FOREIGN KEY ")):
			flag(LintConstraintScan, k)
		}
	}
	for _, k := range sortedKeys(d.Altered) {
		o, was := d.Altered[k], before[k]
		if !onExisting(o) || !strings.HasPrefix(k, KindColumn+":") {
			continue
		}
		if columnType(o.Def) != columnType(was.Def) {
			flag(LintColumnType, k)
		}
		// "not null not valid" (PostgreSQL 18) scans nothing; its later
		// validation takes no lock that blocks writes.
		if strings.Contains(o.Def, " not null") && !strings.Contains(o.Def, " not valid") && !strings.Contains(was.Def, " not null") && !hasNotNullCheck(before, o.Table, k) {
			flag(LintSetNotNull, k)
		}
	}
	for _, k := range d.Dropped {
		if o := before[k]; strings.HasPrefix(k, KindColumn+":") && onExisting(o) {
			flag(LintDropColumn, k)
		}
	}
	return out
}

// columnType is the type part of a column definition.
func columnType(def string) string {
	for _, sep := range []string{" not null", " null"} {
		if i := strings.Index(def, sep); i >= 0 {
			return def[:i]
		}
	}
	return def
}

// hasNotNullCheck reports a validated CHECK (col IS NOT NULL) on table.
func hasNotNullCheck(cat Catalog, table, columnKey string) bool {
	col := strings.TrimPrefix(columnKey, KindColumn+":"+table+".")
	want := "CHECK ((" + col + " IS NOT NULL))"
	for k, o := range cat {
		if strings.HasPrefix(k, KindConstraint+":"+table+".") && !o.Invalid && o.Def == want {
			return true
		}
	}
	return false
}
