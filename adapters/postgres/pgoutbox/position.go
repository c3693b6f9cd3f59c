package pgoutbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/ports"
)

var _ ports.DBHistory = (*Store)(nil)

// Position implements ports.DBHistory: the cluster's system identifier,
// the timeline of the WAL being written (from its segment name, which a
// promotion changes at once; pg_control_checkpoint's waits for the next
// checkpoint) and the current WAL position. Every function it calls may
// be run by any role; it fails on a standby, where no relay writes.
func (s *Store) Position(ctx context.Context) (ports.DBPosition, error) {
	var sys, seg, lsn string
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT system_identifier::text FROM pg_control_system()),
		pg_walfile_name(pg_current_wal_lsn()), pg_current_wal_lsn()::text`).Scan(&sys, &seg, &lsn)
	if err != nil {
		return ports.DBPosition{}, fmt.Errorf("read the database's WAL position: %w", pgerr.Translate(err))
	}
	if len(seg) != 24 {
		return ports.DBPosition{}, fmt.Errorf("read the database's timeline: WAL segment name %q is not 24 hex digits", seg)
	}
	tl, err := strconv.ParseUint(seg[:8], 16, 32)
	if err != nil {
		return ports.DBPosition{}, fmt.Errorf("read the database's timeline: WAL segment name %q is not 24 hex digits", seg)
	}
	hi, lo, ok := strings.Cut(lsn, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return ports.DBPosition{}, fmt.Errorf("read the database's WAL position: %q is not an LSN", lsn)
	}
	return ports.DBPosition{System: sys, Timeline: uint32(tl), LSN: h<<32 | l}, nil
}
