// Command migrate is the release step for a July service: it reports
// migration status, runs the pre-flight check, applies migrations under an
// advisory lock with post-flight verification, rolls structure back when no
// data is at stake, and runs resumable backfills. Run `migrate -h`.
package main

import (
	"github.com/july/template/internal/appkit"
)

func main() { appkit.Main(run) }
