package release

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Object kinds tracked by the ownership manifest.
const (
	KindTable      = "table"
	KindColumn     = "column"
	KindConstraint = "constraint"
	KindIndex      = "index"
	KindTrigger    = "trigger"
	KindFunction   = "function"
	KindType       = "type"
)

// ObjectKey names a database object in manifests and snapshots, e.g.
// "index:ix_outbox_event_failed" or "column:tb_outbox_event.status".
func ObjectKey(kind, name string) string { return kind + ":" + name }

// Claim says that a migration creates or alters an object.
type Claim struct {
	Object    string `json:"object"`
	Migration string `json:"migration"`
	Set       string `json:"set"`
	Create    bool   `json:"create"`
}

// Manifest is the ownership manifest derived from the up SQL of every set.
type Manifest struct {
	Claims []Claim
}

// Owners returns the migrations that claim object, in version order.
func (m Manifest) Owners(object string) []string {
	var out []string
	for _, c := range m.Claims {
		if c.Object == object {
			out = append(out, c.Migration)
		}
	}
	return out
}

// Created returns the objects migration creates.
func (m Manifest) Created(version string) []string {
	var out []string
	for _, c := range m.Claims {
		if c.Migration == version && c.Create {
			out = append(out, c.Object)
		}
	}
	return out
}

// Tables returns every table any migration creates.
func (m Manifest) Tables() []string {
	var out []string
	for _, c := range m.Claims {
		if c.Create && strings.HasPrefix(c.Object, KindTable+":") {
			out = append(out, strings.TrimPrefix(c.Object, KindTable+":"))
		}
	}
	return out
}

// conflicts lists objects that more than one migration creates or alters.
func (m Manifest) conflicts(r *Report) {
	seen := map[string]map[string]bool{}
	for _, c := range m.Claims {
		if seen[c.Object] == nil {
			seen[c.Object] = map[string]bool{}
		}
		seen[c.Object][c.Migration] = true
	}
	keys := make([]string, 0, len(seen))
	for k, v := range seen {
		if len(v) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		var ms []string
		for v := range seen[k] {
			ms = append(ms, v)
		}
		sort.Strings(ms)
		r.add(SeverityViolation, "ownership_conflict", k, int64(len(ms)),
			fmt.Sprintf("created or altered by migrations %s; one migration must own it, others may only depend on it", strings.Join(ms, ", ")))
	}
}

// BuildManifest parses the up SQL of every migration in sets.
func BuildManifest(sets []Set) (Manifest, error) {
	migs, err := listMigrations(sets)
	if err != nil {
		return Manifest{}, err
	}
	var man Manifest
	for _, mg := range migs {
		sql, err := readSQL(mg, mg.Up)
		if err != nil {
			return Manifest{}, err
		}
		for _, st := range statements(sql) {
			for _, c := range claims(st) {
				c.Migration, c.Set = mg.Version, mg.Set
				man.Claims = append(man.Claims, c)
			}
		}
	}
	return man, nil
}

var (
	reCreateTable = regexp.MustCompile(`^create\s+(?:unlogged\s+)?table\s+(?:if\s+not\s+exists\s+)?([\w.]+)\s*\((.*)\)`)
	reCreateIndex = regexp.MustCompile(`^create\s+(?:unique\s+)?index\s+(?:concurrently\s+)?(?:if\s+not\s+exists\s+)?(\w+)\s+on\s`)
	reCreateFunc  = regexp.MustCompile(`^create\s+(?:or\s+replace\s+)?function\s+([\w.]+)`)
	reCreateTrig  = regexp.MustCompile(`^create\s+(?:or\s+replace\s+)?(?:constraint\s+)?trigger\s+(\w+)`)
	reCreateType  = regexp.MustCompile(`^create\s+type\s+([\w.]+)`)
	reAlterTable  = regexp.MustCompile(`^alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?([\w.]+)\s+(.*)`)
	reAlterOther  = regexp.MustCompile(`^(?:alter|drop)\s+(index|function|trigger|type|table)\s+(?:concurrently\s+)?(?:if\s+exists\s+)?([\w.]+)`)
	reConstraint  = regexp.MustCompile(`\bconstraint\s+(\w+)`)
	reConAction   = regexp.MustCompile(`^(?:add|drop|validate|alter|rename)\s+constraint\s+(?:if\s+exists\s+)?(\w+)`)
	reAddColumn   = regexp.MustCompile(`^add\s+(?:column\s+)?(?:if\s+not\s+exists\s+)?(\w+)`)
	reColAction   = regexp.MustCompile(`^(?:alter|drop|rename)\s+(?:column\s+)?(?:if\s+exists\s+)?(\w+)`)
	reTrigAction  = regexp.MustCompile(`^(?:enable|disable)\s+(?:always\s+|replica\s+)?trigger\s+(\w+)`)
)

// notColumn are the words that open a table element that is not a column.
var notColumn = map[string]bool{"constraint": true, "primary": true, "unique": true, "check": true, "foreign": true, "exclude": true, "like": true}

func claims(st string) []Claim {
	create := func(kind, name string) Claim { return Claim{Object: ObjectKey(kind, unqualify(name)), Create: true} }
	alter := func(kind, name string) Claim { return Claim{Object: ObjectKey(kind, unqualify(name))} }
	var out []Claim
	switch {
	case reCreateTable.MatchString(st):
		m := reCreateTable.FindStringSubmatch(st)
		table := unqualify(m[1])
		out = append(out, create(KindTable, table))
		for _, el := range splitTop(m[2]) {
			word := firstWord(el)
			if !notColumn[word] && word != "" {
				out = append(out, create(KindColumn, table+"."+word))
			}
			for _, c := range reConstraint.FindAllStringSubmatch(el, -1) {
				out = append(out, create(KindConstraint, c[1]))
			}
		}
	case reCreateIndex.MatchString(st):
		out = append(out, create(KindIndex, reCreateIndex.FindStringSubmatch(st)[1]))
	case reCreateFunc.MatchString(st):
		out = append(out, create(KindFunction, reCreateFunc.FindStringSubmatch(st)[1]))
	case reCreateTrig.MatchString(st):
		out = append(out, create(KindTrigger, reCreateTrig.FindStringSubmatch(st)[1]))
	case reCreateType.MatchString(st):
		out = append(out, create(KindType, reCreateType.FindStringSubmatch(st)[1]))
	case reAlterTable.MatchString(st):
		m := reAlterTable.FindStringSubmatch(st)
		table := unqualify(m[1])
		for _, act := range splitTop(m[2]) {
			switch {
			case reConAction.MatchString(act):
				c := reConAction.FindStringSubmatch(act)
				if strings.HasPrefix(act, "add") {
					out = append(out, create(KindConstraint, c[1]))
				} else {
					out = append(out, alter(KindConstraint, c[1]))
				}
			case reTrigAction.MatchString(act):
				out = append(out, alter(KindTrigger, reTrigAction.FindStringSubmatch(act)[1]))
			case strings.HasPrefix(act, "rename to"), strings.HasPrefix(act, "set "), strings.HasPrefix(act, "owner"):
				out = append(out, alter(KindTable, table))
			case reAddColumn.MatchString(act):
				col := reAddColumn.FindStringSubmatch(act)[1]
				out = append(out, create(KindColumn, table+"."+col))
				for _, c := range reConstraint.FindAllStringSubmatch(act, -1) {
					out = append(out, create(KindConstraint, c[1]))
				}
			case reColAction.MatchString(act):
				out = append(out, alter(KindColumn, table+"."+reColAction.FindStringSubmatch(act)[1]))
			default:
				out = append(out, alter(KindTable, table))
			}
		}
	case reAlterOther.MatchString(st):
		m := reAlterOther.FindStringSubmatch(st)
		out = append(out, alter(m[1], m[2]))
	}
	return out
}

func unqualify(name string) string { return strings.TrimPrefix(name, "public.") }

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], `"`)
}

// splitTop splits s on commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

var reDollarTag = regexp.MustCompile(`\$[a-z_]*\$`)

// statements strips comments and dollar-quoted bodies from a lower-cased
// SQL file and splits it into whitespace-normalized statements.
func statements(sql string) []string {
	var b strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	s := b.String()
	for {
		loc := reDollarTag.FindStringIndex(s)
		if loc == nil {
			break
		}
		tag := s[loc[0]:loc[1]]
		end := strings.Index(s[loc[1]:], tag)
		if end < 0 {
			break
		}
		s = s[:loc[0]] + "''" + s[loc[1]+end+len(tag):]
	}
	var out []string
	for _, st := range strings.Split(s, ";") {
		if st = strings.Join(strings.Fields(st), " "); st != "" {
			out = append(out, st)
		}
	}
	return out
}
