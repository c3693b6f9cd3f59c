#!/usr/bin/env bash
# rescan.sh (make rescan ARTIFACTS=dist/<version>): scan the kept artefacts
# of an earlier build (scripts/supply-chain.sh writes them to
# dist/<version>/: bin/, sbom/, vuln/, manifest.txt) again, without
# rebuilding, against today's vulnerability database: govulncheck -mode
# binary on the kept binaries under tools/vuln-exceptions.txt's policy, and
# every kept SBOM matched module by module (judged when its binary was not
# kept, e.g. an image's SBOM). Results go to <dir>/rescan/<time>-<db>/;
# exit 1 when a finding fails the policy. docs/supply-chain.md has the
# schedule (CI, or cron) that runs it on every release still deployed.
#
# Usage: scripts/rescan.sh ARTIFACT_DIR...
#   RESCAN_VULNDB=latest   (default) the newest golang.org/x/vulndb on the module proxy
#   RESCAN_VULNDB=pinned   the version scripts/supply-chain.sh pins (offline, cached)
#   RESCAN_VULNDB=v0.0.0-… that version
set -euo pipefail
args=()
for d in "$@"; do # supply-chain.sh runs from the repository root
	args+=("$(cd "$d" 2>/dev/null && pwd || echo "$d")")
done
exec "$(dirname "$0")/supply-chain.sh" rescan "${args[@]}"
