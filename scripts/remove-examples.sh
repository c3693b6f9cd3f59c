#!/usr/bin/env bash
# remove-examples.sh deletes the reference domains (examples/) so a service
# starts from the foundation and its own domains (make remove-examples, or
# make new-service, which renders every service without them by default):
#
#   - examples/, and the examples' lines in the service's one list,
#     domains/domains.go (their imports and their Domain() entries);
#   - the blocks between "examples: begin" and "examples: end" (the
#     examples' paths and schemas in docs/openapi.yaml);
#   - until every foundation test runs on its own test domain: the lines
#     marked "examples: delete this line", the Go files marked "examples:
#     delete this file", the imports of the examples' packages and their
#     migrations in test helpers (postgres.MigrateWith(examples.MigrationsFS()...)).
#
# In a service (template.lock) it records examples = removed, so updates
# render the template without them. scripts/run.sh and scripts/check-run.sh
# print and check the examples' steps only while examples/ exists.
#
#   scripts/remove-examples.sh [DIR]    DIR: default the repository holding it
#
# It refuses to run twice.
set -euo pipefail

die() { printf 'remove-examples: %s\n' "$*" >&2; exit 1; }
cd "${1:-$(dirname "$0")/..}"
[ -d examples ] || die "there is no examples/ directory here: the examples are already removed"
module=$(awk '$1 == "module" { print $2; exit }' go.mod)
[ -n "$module" ] || die "go.mod has no module line; run this from a template clone"

# Where the markers may be: everything but examples/ itself and this script.
marked() {
  grep -rlF --include="$1" --exclude-dir=.git --exclude-dir=examples --exclude=remove-examples.sh -- "$2" . || true
}

mapfile -t files < <(marked '*.go' '// examples: delete this file')
for f in "${files[@]}"; do rm -f "$f"; done

mapfile -t lined < <(marked '*' 'examples: delete this line')
for f in "${lined[@]}"; do sed -i '/examples: delete this line/d' "$f"; done

mapfile -t blocks < <(marked '*' 'examples: begin')
for f in "${blocks[@]}"; do sed -i '/examples: begin/,/examples: end/d' "$f"; done

module_re=$(printf '%s' "$module" | sed 's/[.[\*^$/]/\\&/g')
mapfile -t gofiles < <(grep -rlE --include='*.go' --exclude-dir=.git --exclude-dir=examples -- "\"${module_re}/examples(/[a-z]+)?\"|examples\\.MigrationsFS\\(\\)" . || true)
for f in "${gofiles[@]}"; do
  sed -i -E "/^[[:space:]]*\"${module_re}\\/examples(\\/[a-z]+)?\"\$/d" "$f"
  sed -i -e 's/postgres\.MigrateWith(examples\.MigrationsFS()\.\.\.)/postgres.Migrate/g' "$f"
done
# The service's list: the examples' Domain() lines (their imports went above).
pkgs=$(find examples -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | paste -sd'|')
if [ -f domains/domains.go ] && [ -n "$pkgs" ]; then
  sed -i -E "/^[[:space:]]*(${pkgs})\.Domain\(\),?[[:space:]]*(\/\/.*)?\$/d" domains/domains.go
  gofiles+=(domains/domains.go)
fi
rm -rf examples
if [ -f template.lock ]; then
  sed -i -e 's/^examples = .*/examples = removed/' -e '/^foundation = /s/ examples\( \|$\)/\1/' template.lock
fi

# Deleted lines may leave an import block or alignment to tidy.
mapfile -t go_changed < <(for f in "${lined[@]}" "${gofiles[@]}"; do [[ $f == *.go && -f $f ]] && echo "$f"; done | sort -u)
if [ ${#go_changed[@]} -gt 0 ]; then gofmt -w "${go_changed[@]}"; fi

left=$(grep -rlE --include='*.go' --exclude-dir=.git -- "\"${module_re}/examples" . || true)
[ -z "$left" ] || die "still importing the examples: $left"

cat <<MSG
remove-examples: deleted examples/, ${#files[@]} test files, marked lines in ${#lined[@]} files and the
examples' paths and schemas in docs/openapi.yaml.

Next: go build ./... && make test, then add your domain under domains/ and one line in
domains/domains.go (docs/domains.md).
MSG
