#!/usr/bin/env bash
# rename.sh gives a fresh clone of the template its own module path:
#
#   scripts/rename.sh example.com/acme/orders
#
# It rewrites the module line of go.mod (and bench/go.mod, as NEW/bench) and
# every reference to the current module path in the tree's text files (Go
# imports, docs, Makefile, YAML), then gofmt's the Go files whose import
# order changed. The current path is read from go.mod, so the script also
# works on an already renamed tree. It touches nothing under .git and never
# edits binary files. Run it from anywhere; it works on the repository that
# contains it.
set -euo pipefail

die() { printf 'rename: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: scripts/rename.sh NEW_MODULE (e.g. example.com/acme/orders)"
new=$1
# A conservative module path: a dotted host, then path elements; no
# characters that would need escaping in sed or quoting in go.mod.
[[ $new =~ ^[a-z0-9][a-z0-9.-]*\.[a-z]{2,}(/[A-Za-z0-9._~-]+)+$ ]] ||
  die "NEW_MODULE \"$new\" is not a module path like example.com/team/service"

cd "$(dirname "$0")/.."
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
changed=()
while IFS= read -r -d '' f; do
  sed -i "s/${old_re}/$(printf '%s' "$new" | sed 's/[\/&]/\\&/g')/g" "$f"
  changed+=("$f")
done < <(grep -rlIZF --exclude-dir=.git -- "$old" . || true)

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

left=$(grep -rlIF --exclude-dir=.git -- "$old" . || true)
[ -z "$left" ] || die "still referencing $old: $left"

cat <<MSG
rename: module $old -> $new (${#changed[@]} files rewritten).

Next steps:
  1. go build ./... && go vet ./... && make unit     # the renamed tree builds and its rules pass
  2. make remove-examples      # if you do not want the reference domains in examples/:
     it deletes examples/, their wiring (the lines marked "examples: delete this line"),
     the tests through their routes and their paths in docs/openapi.yaml
  3. Register your domain's config keys in apps/internal/domains (ConfigSpecs), add
     its migration sets to migrationSets() in apps/migrate/sets.go and its modules
     to Domains in apps/api/app.go and apps/relay/app.go (README: "Add your own domain").
  4. Rename the images (template-api, template-relay, template-migrate) in
     deploy/k8s/kustomization.yaml and deploy/docker-compose.yml, and the
     Secret name template-secrets, to your service's names.
  5. Update README.md's title and description, then commit.
MSG
