package release

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/uptrace/bun"
)

// SnapshotFile is the file name, at the root of a Set's FS, of its
// recorded schema: what each migration creates, alters and drops, as the
// rehearsal saw it. It is a review artifact (a migration's schema effect
// shows in the diff) and a tripwire: Check reports snapshot_stale when the
// files no longer produce it, e.g. an applied migration was edited.
const SnapshotFile = "schema.json"

// Snapshot maps each migration version of one set to its Step.
type Snapshot map[string]Step

// TakeSnapshot rehearses sets and returns each set's Snapshot, by set name;
// `migrate snapshot` writes them to the sets' directories.
func TakeSnapshot(ctx context.Context, db *bun.DB, sets []Set) (map[string]Snapshot, error) {
	reh, err := Rehearse(ctx, db, sets)
	if err != nil {
		return nil, err
	}
	out := map[string]Snapshot{}
	for _, s := range sets {
		out[s.Name] = Snapshot{}
	}
	for _, step := range reh.Steps {
		for _, f := range step.findings {
			if f.Severity == SeverityViolation && (f.Code == "migration_rehearsal_failed" || f.Code == "unsupported_object" || f.Code == "ownership_conflict") {
				return nil, fmt.Errorf("snapshot of set %s: migration %s: %s: %s", step.Set, step.Version, f.Code, f.Message)
			}
		}
		out[step.Set][step.Version] = step
	}
	return out, nil
}

// Encode renders the snapshot as the SnapshotFile content.
func (s Snapshot) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <> readable in CHECK definitions
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// staleSnapshot compares a set's recorded SnapshotFile, when it has one,
// with the rehearsal.
func staleSnapshot(s Set, reh *Rehearsal, r *Report) error {
	b, err := fs.ReadFile(s.FS, SnapshotFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s of set %s: %w", SnapshotFile, s.Name, err)
	}
	var recorded Snapshot
	if err := json.Unmarshal(b, &recorded); err != nil {
		return fmt.Errorf("parse %s of set %s: %w", SnapshotFile, s.Name, err)
	}
	for _, step := range reh.Steps {
		if step.Set != s.Name {
			continue
		}
		got, _ := json.Marshal(step.Change)
		want, ok := recorded[step.Version]
		wantJSON, _ := json.Marshal(want.Change)
		if !ok || !bytes.Equal(got, wantJSON) {
			r.add(SeverityViolation, "snapshot_stale", step.Version, 1,
				fmt.Sprintf("set %s: the migration files no longer produce the recorded %s (an applied migration was edited, or a new one was added without `migrate snapshot`); restore the file or rerun `migrate snapshot`", s.Name, SnapshotFile))
		}
	}
	return nil
}
