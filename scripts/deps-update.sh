#!/usr/bin/env bash
# deps-update.sh (make deps-update): the update policy of docs/dependencies.md
# as a command. It
#   1. proposes, for every direct dependency (and tool) of go.mod,
#      tools/go.mod and contracttests/containers/go.mod, the newest release of
#      its major version (`go list -m -u -json`, the Go module proxy's answer;
#      a new major version is a new import path and never proposed);
#   2. applies the proposal in a scratch worktree of HEAD (`go get` + `go mod
#      tidy` per module; this checkout is never touched);
#   3. runs the gate there (DEPS_GATE, default `make test`; `DEPS_GATE="make
#      ci"` for the full gate) and the vulnerability scan (the tree's own
#      `scripts/supply-chain.sh check`: policy, exceptions, SBOMs, licenses);
#   4. writes a Markdown report (what moved from -> to, gate and scan
#      results), the go.mod/go.sum patch to `git apply`, and the gate's log,
#      and prints the report's path.
# Exit status: 0 when the gate and the scan pass (or with -dry-run), 1 when
# either fails, 2 on a usage error.
#
# Usage: scripts/deps-update.sh [-dry-run]
#   -dry-run        only the proposal: no worktree, no gate, no scan
# Environment:
#   DEPS_GATE       the gate command, run by bash in the scratch tree (default: make test)
#   DEPS_MODULES    module directories, relative to the repository (default: . tools contracttests/containers)
#   DEPS_REPORT     the report's path (default: dist/deps-update/<UTC time>-<commit>.md)
#   DEPS_VULN=0     skip the vulnerability scan
#   DEPS_ROOT       the git repository to update (default: this checkout; scripts/check-deps-update.sh
#                   points it at a scratch repository)
set -euo pipefail
SCRIPTS=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "${DEPS_ROOT:-$SCRIPTS/..}" && pwd)
cd "$ROOT"
GO=${GO:-go}
usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; }
dry=""
case ${1:-} in
-dry-run | --dry-run) dry=1 ;;
"") ;;
*) usage; exit 2 ;;
esac
MODULES=${DEPS_MODULES:-. tools contracttests/containers}
GATE=${DEPS_GATE:-make test}
rev=$(git rev-parse --short HEAD)
REPORT=${DEPS_REPORT:-$ROOT/dist/deps-update/$(date -u +%Y%m%dT%H%M%SZ)-$rev.md}
mkdir -p "$(dirname "$REPORT")"
REPORT=$(cd "$(dirname "$REPORT")" && pwd)/$(basename "$REPORT")
log() { printf 'deps-update: %s\n' "$*" >&2; }

# The proposal logic is tools/supplychain's depsupdate (unit-tested there).
CACHE=${SUPPLY_CHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/july-template/supply-chain}
BIN=$CACHE/bin
mkdir -p "$BIN"
GOWORK=off $GO -C "$SCRIPTS/../tools" build -o "$BIN/" ./supplychain

work=$(mktemp -d)
tree=""
cleanup() {
	if [[ -n $tree ]]; then git -C "$ROOT" worktree remove --force "$tree" >/dev/null 2>&1 || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# 1. The proposal: "<module dir>\t<path>\t<from>\t<to>\t<kind>\t<note>" lines.
: >"$work/proposal.tsv"
for m in $MODULES; do
	[[ -f $m/go.mod ]] || { log "$m/go.mod does not exist"; exit 2; }
	GOWORK=off GOFLAGS=-mod=mod $GO -C "$m" list -m -u -e -json all 2>>"$work/list.log" |
		"$BIN/supplychain" depsupdate -gomod "$m/go.mod" | sed "s|^|$m\t|" >>"$work/proposal.tsv"
done
moves=$(awk -F'\t' '$5 != "none"' "$work/proposal.tsv" | wc -l)
log "$moves proposed update(s) in $MODULES"

{
	echo "# Dependency update proposal"
	echo
	echo "Repository \`$(basename "$ROOT")\` at \`$(git rev-parse HEAD)\`, $(date -u +%Y-%m-%dT%H:%M:%SZ)."
	echo "Each direct dependency (and tool) moves to the newest release of its major version"
	echo "(\`go list -m -u\`; a new major version is a new import path and never proposed)."
	echo
	if [[ $moves -eq 0 ]]; then echo "Every direct dependency is at the newest release of its major version."; echo; fi
	echo "| module | dependency | from | to | kind | note |"
	echo "|---|---|---|---|---|---|"
	awk -F'\t' '{ printf "| `%s` | `%s` | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }' "$work/proposal.tsv"
	echo
} >"$REPORT"

if [[ -n $dry ]]; then
	echo "Dry run (\`-dry-run\`): nothing applied, no gate, no scan." >>"$REPORT"
	log "report: $REPORT"
	echo "$REPORT"
	exit 0
fi

# 2. Apply in a scratch worktree of HEAD (uncommitted changes are not in it).
tree=$work/tree
git -C "$ROOT" worktree add --detach -q "$tree" HEAD
applied=1
for m in $MODULES; do
	mapfile -t args < <(awk -F'\t' -v m="$m" '$1 == m && $5 != "none" { print $2 "@" $4 }' "$work/proposal.tsv")
	[[ ${#args[@]} -gt 0 ]] || continue
	if ! (cd "$tree/$m" && GOWORK=off GOFLAGS=-mod=mod $GO get "${args[@]}" && GOWORK=off $GO mod tidy) >>"$work/apply.log" 2>&1; then
		applied=""
		log "applying the proposal to $m failed (the report has the output)"
	fi
done
git -C "$tree" diff -- '*go.mod' '*go.sum' >"${REPORT%.md}.patch"

{
	echo "## Applied"
	echo
	if [[ -z $applied ]]; then
		echo "**Applying the proposal failed** (\`go get\` / \`go mod tidy\`):"
		echo
		echo '```'
		tail -n 30 "$work/apply.log"
		echo '```'
	else
		echo "Versions in the updated tree (\`go list -m\`; a requirement of an updated module may have moved further):"
		echo
		echo "| module | dependency | from | now |"
		echo "|---|---|---|---|"
		while IFS=$'\t' read -r m path from _ kind _; do
			[[ $kind == none ]] && continue
			now=$(cd "$tree/$m" && GOWORK=off $GO list -m -f '{{.Version}}' "$path" 2>/dev/null || echo "?")
			echo "| \`$m\` | \`$path\` | $from | $now |"
		done <"$work/proposal.tsv"
		echo
		echo "Every go.mod line that changed (the full patch: \`$(basename "${REPORT%.md}.patch")\`, \`git apply\` it):"
		echo
		echo '```diff'
		git -C "$tree" diff -U0 -- '*go.mod' | grep '^[-+][^-+]' || echo "(none)"
		echo '```'
	fi
	echo
} >>"$REPORT"

# 3. The gate and the vulnerability scan.
gate_rc=skipped vuln_rc=skipped
if [[ -n $applied ]]; then
	log "gate: $GATE (log: ${REPORT%.md}.gate.log)"
	gate_rc=0
	(cd "$tree" && bash -c "$GATE") >"${REPORT%.md}.gate.log" 2>&1 || gate_rc=$?
	if [[ ${DEPS_VULN:-1} != 0 ]]; then
		log "vulnerability scan"
		vuln_rc=0
		if [[ -x $tree/scripts/supply-chain.sh ]]; then
			(cd "$tree" && GO=$GO ./scripts/supply-chain.sh check) >"$work/vuln.log" 2>&1 || vuln_rc=$?
		else # a repository without the template's scripts: govulncheck, source mode
			dirs=()
			for m in $MODULES; do dirs+=("$tree/$m"); done
			GO=$GO "$SCRIPTS/supply-chain.sh" vulnscan "${dirs[@]}" >"$work/vuln.log" 2>&1 || vuln_rc=$?
		fi
	fi
fi
verdict() { case $1 in 0) echo "**pass**" ;; skipped) echo "not run" ;; *) echo "**FAIL** (exit $1)" ;; esac; }
{
	echo "## Gate"
	echo
	echo "\`$GATE\` in the updated tree: $(verdict "$gate_rc")."
	if [[ $gate_rc != 0 && $gate_rc != skipped ]]; then
		echo " Its last lines (all of it: \`$(basename "${REPORT%.md}.gate.log")\`):"
		echo
		echo '```'
		tail -n 40 "${REPORT%.md}.gate.log"
		echo '```'
	fi
	echo
	echo "## Vulnerability scan"
	echo
	echo "govulncheck with the pinned database (\`scripts/supply-chain.sh\`) on the updated tree: $(verdict "$vuln_rc")."
	if [[ -s $work/vuln.log ]]; then
		echo
		echo '```'
		grep -E '^(FAIL|note|vulnpolicy:|licenses|supply-chain:)|Vulnerability #|affected by|No vulnerabilities' "$work/vuln.log" | tail -n 40 || tail -n 20 "$work/vuln.log"
		echo '```'
	fi
} >>"$REPORT"

log "report: $REPORT"
echo "$REPORT"
[[ $gate_rc == 0 && ($vuln_rc == 0 || $vuln_rc == skipped) ]]
