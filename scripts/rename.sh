#!/usr/bin/env bash
# rename.sh gives a tree its own module path:
#
#   scripts/rename.sh example.com/acme/orders [DIR]
#
# It rewrites the module line of go.mod (and bench/go.mod, as NEW/bench) and
# every reference to the current module path in the tree's text files (Go
# imports, docs, Makefile, YAML), then gofmt's the Go files whose import
# order changed. The current path is read from go.mod, so the script also
# works on an already renamed tree (a service's template.lock gets the new
# module). It touches nothing under .git and never edits binary files. DIR
# defaults to the repository that contains the script; make new-service
# (scripts/template.sh) renders every service through it.
set -euo pipefail

die() { printf 'rename: %s\n' "$*" >&2; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: scripts/rename.sh NEW_MODULE [DIR] (e.g. example.com/acme/orders)"
new=$1
# A conservative module path: a dotted host, then path elements; no
# characters that would need escaping in sed or quoting in go.mod.
[[ $new =~ ^[a-z0-9][a-z0-9.-]*\.[a-z]{2,}(/[A-Za-z0-9._~-]+)+$ ]] ||
  die "NEW_MODULE \"$new\" is not a module path like example.com/team/service"

cd "${2:-$(dirname "$0")/..}"
command -v go >/dev/null || die "the go command is not on PATH; install Go 1.26"
old=$(awk '$1 == "module" { print $2; exit }' go.mod)
[ -n "$old" ] || die "go.mod has no module line; run this from a template clone"
[ "$old" != "$new" ] || die "the module is already $new"

export GOWORK=off # edit each go.mod on its own, whatever go.work says
go mod edit -module "$new"
if [ -f bench/go.mod ]; then
  (cd bench && go mod edit -module "$new/bench")
fi

# Every text file that still names the old path; -I skips binaries.
old_re=$(printf '%s' "$old" | sed 's/[.[\*^$/]/\\&/g')
mapfile -d '' -t changed < <(grep -rlIZF --exclude-dir=.git --exclude=template.lock -- "$old" . || true)
if [ ${#changed[@]} -gt 0 ]; then
  sed -i "s/${old_re}/$(printf '%s' "$new" | sed 's/[\/&]/\\&/g')/g" "${changed[@]}"
fi
if [ -f template.lock ]; then sed -i "s/^module = .*/module = $(printf '%s' "$new" | sed 's/[\/&]/\\&/g')/" template.lock; fi

# The new path may sort differently among its import group.
gofiles=()
for f in "${changed[@]}"; do
  [[ $f == *.go ]] && gofiles+=("$f")
done
if [ ${#gofiles[@]} -gt 0 ]; then
  gofmt -w "${gofiles[@]}"
fi

# A go.mod that requires the renamed module (contracttests/containers) may
# need its require lines re-sorted; tidy (make lint) would flag that.
while IFS= read -r -d '' m; do
  (cd "$(dirname "$m")" && go mod edit -fmt)
done < <(find . -name .git -prune -o -name go.mod -print0)

left=$(grep -rlIF --exclude-dir=.git --exclude=template.lock -- "$old" . || true)
[ -z "$left" ] || die "still referencing $old: $left"

cat <<MSG
rename: module $old -> $new (${#changed[@]} files rewritten).

Next: go build ./... && make test. A renamed clone cannot take the template's
later fixes; make new-service (docs/template.md) makes a service that can.
MSG
