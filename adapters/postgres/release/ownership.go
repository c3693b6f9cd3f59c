package release

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/uptrace/bun"
)

// Claim says that a migration creates or alters (or drops) an object.
type Claim struct {
	Object    string `json:"object"`
	Migration string `json:"migration"`
	Set       string `json:"set"`
	Create    bool   `json:"create"`
	Drop      bool   `json:"drop,omitempty"`
}

// Manifest is the ownership manifest: what each migration's rehearsal
// created, altered and dropped.
type Manifest struct {
	Claims []Claim
}

// BuildManifest rehearses sets on db (see Rehearse) and returns who owns
// what. The rehearsal writes nothing.
func BuildManifest(ctx context.Context, db *bun.DB, sets []Set) (Manifest, error) {
	reh, err := Rehearse(ctx, db, sets)
	if err != nil {
		return Manifest{}, err
	}
	return reh.Manifest(), nil
}

// Manifest returns the claims of the rehearsal.
func (r *Rehearsal) Manifest() Manifest {
	var man Manifest
	for _, s := range r.Steps {
		for _, k := range sortedKeys(s.Created) {
			man.Claims = append(man.Claims, Claim{Object: k, Migration: s.Version, Set: s.Set, Create: true})
		}
		for _, k := range sortedKeys(s.Altered) {
			man.Claims = append(man.Claims, Claim{Object: k, Migration: s.Version, Set: s.Set})
		}
		for _, k := range s.Dropped {
			man.Claims = append(man.Claims, Claim{Object: k, Migration: s.Version, Set: s.Set, Drop: true})
		}
	}
	return man
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

// conflicts lists objects that more than one migration creates, alters
// or drops: a table, column, index or constraint is created or changed by
// one migration only, so each object has one owner to roll back.
// A set may evolve its own objects in two documented ways (evolves): a
// later migration of the set that created an object may drop it, retiring
// it (a replaced index, say; its down file recreates it), and may redefine
// its own view or function (CREATE OR REPLACE, or DROP + CREATE), e.g.
// recreate vw_outbox_event after adding a column to tb_outbox_event.
// Altering a table, column, index or constraint later, or touching another
// set's object in any way, stays a conflict.
func (m Manifest) conflicts(r *Report) {
	byObject := map[string][]Claim{}
	for _, c := range m.Claims {
		byObject[c.Object] = append(byObject[c.Object], c)
	}
	keys := make([]string, 0, len(byObject))
	for k, cs := range byObject {
		if !evolves(cs) && len(claimants(cs)) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		ms := claimants(byObject[k])
		r.add(SeverityViolation, "ownership_conflict", k, int64(len(ms)),
			fmt.Sprintf("created or altered by migrations %s; one migration must own it, others may only depend on it "+
				"(its own set may later drop it, or redefine it if it is a view or function)", strings.Join(ms, ", ")))
	}
}

// replaceable are the kinds whose definition a later migration of the
// owning set may replace: nothing else depends on their storage.
var replaceable = map[string]bool{KindView: true, KindFunction: true}

// evolves reports claims that are one creation followed only by changes
// the creating set may make to its own object: drops, and for a
// replaceable kind, redefinitions by later migrations of that set.
func evolves(cs []Claim) bool {
	if len(cs) < 2 || !cs[0].Create {
		return false
	}
	kind, _, _ := strings.Cut(cs[0].Object, ":")
	for _, c := range cs[1:] {
		if c.Set != cs[0].Set || c.Migration <= cs[0].Migration || !c.Drop && !replaceable[kind] {
			return false
		}
	}
	return true
}

// claimants returns the distinct migrations of cs, sorted.
func claimants(cs []Claim) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cs {
		if !seen[c.Migration] {
			seen[c.Migration] = true
			out = append(out, c.Migration)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// statements strips comments and dollar-quoted bodies from a lower-cased
// SQL file and splits it into whitespace-normalized statements; Down reads
// the tables a down file touches with it.
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

var reDollarTag = regexp.MustCompile(`\$[a-z_]*\$`)
