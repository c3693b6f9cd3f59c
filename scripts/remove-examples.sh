#!/usr/bin/env bash
# remove-examples.sh deletes the reference domains (examples/) and
# everything that exists only for them, so a new service starts from the
# foundation alone (make remove-examples; scripts/check-rename.sh proves it
# on every `make test` by running the full test suite of what remains):
#
#   - examples/;
#   - every line marked "examples: delete this line": the examples'
#     entries in the service's one domain list (apps/internal/domains.All,
#     the only wiring a domain has), and the examples' cases in the
#     remaining tests; and the Go files marked "examples: delete this
#     file" (apps/ tests that exercise the examples' routes);
#   - the imports of the examples' packages, and their migrations in the
#     test helpers (postgres.MigrateWith(examples.MigrationsFS()...));
#   - the blocks between "examples: begin" and "examples: end" (the
#     examples' paths and schemas in docs/openapi.yaml, test cases that
#     need the examples' tables).
#
# scripts/run.sh and scripts/check-run.sh print and check the examples'
# steps only while examples/ exists. Run it from anywhere; it works on the
# repository that contains it, and refuses to run twice.
set -euo pipefail

die() { printf 'remove-examples: %s\n' "$*" >&2; exit 1; }
cd "$(dirname "$0")/.."
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
rm -rf examples

# Deleted lines may leave an import block or alignment to tidy.
mapfile -t go_changed < <(for f in "${lined[@]}" "${gofiles[@]}"; do [[ $f == *.go && -f $f ]] && echo "$f"; done | sort -u)
if [ ${#go_changed[@]} -gt 0 ]; then gofmt -w "${go_changed[@]}"; fi

left=$(grep -rlE --include='*.go' --exclude-dir=.git -- "\"${module_re}/examples" . || true)
[ -z "$left" ] || die "still importing the examples: $left"

cat <<MSG
remove-examples: deleted examples/, ${#files[@]} test files, marked lines in ${#lined[@]} files and the
examples' paths and schemas in docs/openapi.yaml.

Next: go build ./... && make test, then add your own domain (README, "Add your own domain").
MSG
