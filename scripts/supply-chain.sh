#!/usr/bin/env bash
# Supply-chain checks for `make ci` (docs/supply-chain.md), offline apart
# from the Go module proxy:
#   1. vulnerabilities: govulncheck against a local database built from the
#      golang.org/x/vulndb module, source mode on every go.work module and
#      binary mode on apps/api, apps/relay and apps/migrate; the policy is in
#      tools/supplychain/vulnpolicy.go, the exceptions in tools/vuln-exceptions.txt;
#   2. SBOM: a CycloneDX SBOM per binary lists every module `go version -m` reports;
#   3. licenses: every module's license against tools/licenses.txt;
#   4. artefacts: the binaries, their SBOMs, the scan reports and the license
#      report are kept per build in dist/<version>/ (git describe), so a
#      release can be rescanned later without rebuilding (rescan, below).
# The tools are built from the tools module (tools/go.mod), never the service's go.mod.
#
# Usage: scripts/supply-chain.sh [check|sbom|artifacts|rescan DIR...|deps-report|vulnscan DIR...]
#   check       the gate (1-4)
#   artifacts   build (or take SUPPLY_CHAIN_BINARIES) and keep binaries, SBOMs and a
#               manifest in the artefact directory, without scanning
#   rescan DIR  scan kept artefacts again with today's database (scripts/rescan.sh)
#   SUPPLY_CHAIN_BINARIES="name=path ..."  scan these binaries instead of building
#   the three apps (used by scripts/check-vulnscan.sh to plant a vulnerable one).
#   SUPPLY_CHAIN_ARTIFACTS=DIR  the artefact directory (default dist/<git describe>).
#   VULNDB_VERSION=v0.0.0-...   another golang.org/x/vulndb version than the pinned one;
#   "latest" asks the module proxy for the newest (rescan's default).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The vulnerability database version: the one place it is pinned. Bump it
# with the newest pseudo-version the proxy has:
#   go list -m -json golang.org/x/vulndb@latest   (its "Version" field)
PINNED_VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018
VULNDB_VERSION=${VULNDB_VERSION:-$PINNED_VULNDB_VERSION}

# The cache (tools, the built database, source-scan results keyed by a hash
# of every input) lives outside the checkout, so a fresh clone on the same
# machine (CI) reuses it; a fresh machine builds it in about 4 minutes.
CACHE=${SUPPLY_CHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/july-template/supply-chain}
BIN=$CACHE/bin
OUT=$CACHE/out
mkdir -p "$BIN" "$OUT"
GO=${GO:-go}

log() { printf 'supply-chain: %s\n' "$*"; }

build_tools() {
	GOWORK=off $GO -C tools build -o "$BIN/" ./supplychain \
		golang.org/x/vuln/cmd/govulncheck \
		github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod
}

# resolve_vulndb replaces VULNDB_VERSION=latest with the newest version the
# module proxy has (call it outside $(...) to keep the answer).
resolve_vulndb() {
	if [[ $VULNDB_VERSION == latest ]]; then
		VULNDB_VERSION=$(cd "$CACHE" && GOWORK=off GOFLAGS=-mod=mod $GO list -m -json golang.org/x/vulndb@latest |
			sed -n 's/^[[:space:]]*"Version": "\(.*\)",*$/\1/p')
		[[ -n $VULNDB_VERSION ]] || { echo "supply-chain: the module proxy did not answer golang.org/x/vulndb@latest" >&2; exit 1; }
	fi
}

# vulndb prints the file:// database directory, building it once per version
# (VULNDB_VERSION=latest: the newest the module proxy has).
vulndb() {
	resolve_vulndb
	local db=$CACHE/vulndb/$VULNDB_VERSION
	if [[ ! -f $db/index/modules.json ]]; then
		mkdir -p "$CACHE/vulndb"
		local dir
		dir=$(GOWORK=off GOFLAGS=-mod=mod $GO mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
		[[ -n $dir ]] || { echo "supply-chain: could not download golang.org/x/vulndb@$VULNDB_VERSION from the module proxy" >&2; exit 1; }
		"$BIN/supplychain" vulndb -src "$dir/data/osv" -out "$db" >&2
	fi
	echo "$db"
}

# modules lists the go.work modules (directories), or "." without a go.work.
modules() {
	if [[ -f go.work ]]; then
		$GO work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)",*$/\1/p'
	else
		echo .
	fi
}

# build_apps builds the three apps as deploy/Dockerfile does (static,
# -trimpath, stamped by scripts/buildflags.sh, the service's own module graph), so the kept binaries are the
# release binaries' twins.
build_apps() {
	local a flags
	flags=$(GO=$GO ./scripts/buildflags.sh)
	for a in api relay migrate; do
		CGO_ENABLED=0 GOWORK=off $GO build -trimpath -ldflags="$flags" -o "$BIN/$a" "./apps/$a"
	done
}

# version names the build: git describe (a tag, else the commit; -dirty for
# uncommitted changes).
version() { git describe --tags --always --dirty 2>/dev/null || echo devel; }

# artifacts_dir prints (and creates) the build's artefact directory.
artifacts_dir() {
	local d=${SUPPLY_CHAIN_ARTIFACTS:-$ROOT/dist/$(version)}
	mkdir -p "$d/bin" "$d/sbom" "$d/vuln"
	(cd "$d" && pwd)
}

# keep_binaries DIR copies every binary into DIR/bin, writes DIR/sbom/<name>.cdx.json
# (checked against the binary) and DIR/manifest.txt.
keep_binaries() {
	local dir=$1 name path
	while IFS='=' read -r name path; do
		cp "$path" "$dir/bin/$name"
	done < <(binaries)
	sbom "$dir/sbom"
	{
		echo "version $(version)"
		echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
		echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "go $($GO env GOVERSION)"
		echo "vulndb $VULNDB_VERSION"
		(cd "$dir/bin" && sha256sum -- *) | sed 's/^/sha256 /'
	} >"$dir/manifest.txt"
}

binaries() {
	if [[ -n ${SUPPLY_CHAIN_BINARIES:-} ]]; then
		echo "$SUPPLY_CHAIN_BINARIES" | tr ' ' '\n'
	else
		printf '%s\n' "api=$BIN/api" "relay=$BIN/relay" "migrate=$BIN/migrate"
	fi
}

# srckey hashes everything a source scan's answer depends on, so a warm
# cache skips govulncheck's call-graph work when nothing changed.
srckey() {
	{
		echo "$VULNDB_VERSION"
		sha256sum tools/go.sum
		git ls-files -co --exclude-standard -- '*.go' '*go.mod' '*go.sum' 'go.work' ':!tools/' |
			sort | xargs -r sha256sum
	} | sha256sum | cut -c1-16
}

check() {
	build_tools
	local db policy_args=() m label name path t0
	db=$(vulndb)
	[[ -n ${SUPPLY_CHAIN_BINARIES:-} ]] || build_apps

	# 1. Vulnerabilities.
	t0=$SECONDS
	if [[ -z ${SUPPLY_CHAIN_BINARIES:-} ]]; then
		local key
		key=$(srckey)
		while read -r m; do
			label=${m#./}; label=${label:-root}; [[ $m == . ]] && label=root
			local f=$OUT/vuln-source-${label//\//_}.json
			if [[ ! -s $f || $(cat "$f.key" 2>/dev/null) != "$key" ]]; then
				"$BIN/govulncheck" -db "file://$db" -format json -C "$m" ./... >"$f.tmp"
				mv "$f.tmp" "$f"; echo "$key" >"$f.key"
			fi
			policy_args+=("source:$label=$f")
		done < <(modules)
		$GO list -deps ./apps/api ./apps/relay ./apps/migrate >"$OUT/prod-packages.txt"
	fi
	while IFS='=' read -r name path; do
		local f=$OUT/vuln-binary-$name.json
		"$BIN/govulncheck" -db "file://$db" -format json -mode binary "$path" >"$f"
		policy_args+=("binary:$name=$f")
	done < <(binaries)
	log "vulnerability scans took $((SECONDS - t0))s"
	# The SBOM and license checks run even when the policy fails, so one run
	# reports everything; the exit status is the policy's if it failed.
	local rc=0
	"$BIN/supplychain" vulnpolicy -exceptions tools/vuln-exceptions.txt \
		-prod "$OUT/prod-packages.txt" "${policy_args[@]}" | tee "$OUT/vulnpolicy.txt" || rc=$?
	[[ -z ${SUPPLY_CHAIN_BINARIES:-} ]] || return $rc

	# 2. SBOMs cover every module the binaries embed; 4. they, the binaries
	# and the scan reports are kept as the build's artefacts.
	local art
	art=$(artifacts_dir)
	keep_binaries "$art"
	local a lbl
	for a in "${policy_args[@]}"; do # mode:label=file, this run's reports only
		lbl=${a%%=*}; lbl=${lbl#*:}
		cp "${a#*=}" "$art/vuln/${a%%:*}-${lbl//\//_}.json"
	done
	cp "$OUT/vulnpolicy.txt" "$art/vuln/"
	echo "$VULNDB_VERSION" >"$art/vuln/vulndb-version.txt"

	# 3. Licenses of every module any go.work module builds or tests with.
	while read -r m; do
		$GO -C "$m" list -deps -test -f \
			'{{with .Module}}{{with .Replace}}{{.Path}} {{.Version}} {{.Dir}}{{else}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./...
	done < <(modules) | sort -u |
		"$BIN/supplychain" licenses -policy tools/licenses.txt -report "$OUT/licenses.tsv" || rc=$?
	cp "$OUT/licenses.tsv" "$art/" 2>/dev/null || true
	log "artefacts of this build: $art (binaries, sbom/, vuln/, licenses.tsv, manifest.txt)"
	return $rc
}

# rescan DIR...: scan kept artefacts again, without rebuilding, with
# VULNDB_VERSION's database (default: the newest on the module proxy):
# govulncheck -mode binary on DIR/bin/* under the same policy and
# exceptions, and every DIR/sbom/*.cdx.json against the database (judged
# when its binary was not kept). Results go to DIR/rescan/<time>-<db>/.
rescan() {
	[[ $# -gt 0 ]] || { echo "usage: $0 rescan ARTIFACT_DIR..." >&2; exit 2; }
	build_tools
	local db rc=0 dir out name f sboms
	resolve_vulndb
	db=$(vulndb)
	for dir in "$@"; do
		[[ -d $dir/bin || -d $dir/sbom ]] || { log "$dir has neither bin/ nor sbom/: not an artefact directory"; rc=1; continue; }
		dir=$(cd "$dir" && pwd)
		out=$dir/rescan/$(date -u +%Y%m%dT%H%M%SZ)-$VULNDB_VERSION
		mkdir -p "$out"
		log "rescan $dir (built: $(sed -n 's/^built //p' "$dir/manifest.txt" 2>/dev/null || echo unknown)) with golang.org/x/vulndb@$VULNDB_VERSION"
		local policy_args=()
		for f in "$dir"/bin/*; do
			[[ -f $f ]] || continue
			name=$(basename "$f")
			"$BIN/govulncheck" -db "file://$db" -format json -mode binary "$f" >"$out/binary-$name.json"
			policy_args+=("binary:$name=$out/binary-$name.json")
		done
		if [[ ${#policy_args[@]} -gt 0 ]]; then
			"$BIN/supplychain" vulnpolicy -exceptions tools/vuln-exceptions.txt "${policy_args[@]}" | tee "$out/vulnpolicy.txt" || rc=1
		fi
		sboms=()
		for f in "$dir"/sbom/*.cdx.json; do
			[[ -f $f ]] || continue
			name=$(basename "$f" .cdx.json)
			if [[ -f $dir/bin/$name ]]; then
				sboms+=("$f") # its binary was judged above: list the module-level matches
			else
				"$BIN/supplychain" sbomscan -db "$db" -judge -exceptions tools/vuln-exceptions.txt "$f" | tee -a "$out/sbom.txt" || rc=1
			fi
		done
		if [[ ${#sboms[@]} -gt 0 ]]; then
			"$BIN/supplychain" sbomscan -db "$db" "${sboms[@]}" | tee -a "$out/sbom.txt" || rc=1
		fi
		log "rescan results: $out"
	done
	return $rc
}

# sbom DIR writes DIR/<app>.cdx.json for each binary and checks it against
# `go version -m`.
sbom() {
	local dir=$1 name path version
	mkdir -p "$dir"
	version=$(git describe --tags --always --dirty 2>/dev/null || echo devel)
	while IFS='=' read -r name path; do
		"$BIN/cyclonedx-gomod" bin -json -noserial -version "$version" -output "$dir/$name.cdx.json" "$path" 2>/dev/null
		$GO version -m "$path" | "$BIN/supplychain" sbomcheck -sbom "$dir/$name.cdx.json"
	done < <(binaries)
}

case ${1:-check} in
check) check ;;
sbom)
	build_tools; build_apps
	sbom "${SBOM_DIR:-$ROOT/bin/sbom}"
	log "SBOMs in ${SBOM_DIR:-bin/sbom}/"
	;;
artifacts)
	build_tools
	[[ -n ${SUPPLY_CHAIN_BINARIES:-} ]] || build_apps
	art=$(artifacts_dir)
	keep_binaries "$art"
	log "artefacts: $art"
	echo "$art"
	;;
rescan)
	shift
	VULNDB_VERSION=${RESCAN_VULNDB:-latest}
	[[ $VULNDB_VERSION == pinned ]] && VULNDB_VERSION=$PINNED_VULNDB_VERSION
	rescan "$@"
	;;
deps-report)
	build_tools
	while read -r m; do
		echo "== $m (direct dependencies; latest from the module proxy)"
		GOWORK=off GOFLAGS=-mod=mod $GO -C "$m" list -m -u -json all | "$BIN/supplychain" depsreport
	done < <(modules)
	;;
vulnscan)
	# vulnscan DIR...: govulncheck, source mode, with the pinned database on
	# each module directory (absolute paths); exit 3 when one is affected.
	# scripts/deps-update.sh uses it on a tree without this script.
	shift
	build_tools
	db=$(vulndb)
	rc=0
	for d in "$@"; do
		log "govulncheck $d"
		"$BIN/govulncheck" -db "file://$db" -C "$d" ./... || rc=$?
	done
	exit $rc
	;;
*) echo "usage: $0 [check|sbom|artifacts|rescan DIR...|deps-report|vulnscan DIR...]" >&2; exit 2 ;;
esac
