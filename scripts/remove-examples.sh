#!/usr/bin/env bash
# remove-examples.sh deletes the reference domains (examples/) so a service
# starts from the foundation and its own domains (make remove-examples, or
# make new-service, which renders every service without them by default):
#
#   - examples/;
#   - the examples' lines in the service's one list, domains/domains.go
#     (their imports and their Domain() entries);
#   - the blocks between "examples: begin" and "examples: end" (the
#     examples' paths and schemas in docs/openapi.yaml).
#
# Nothing else names the examples: the foundation tests itself on its own
# test domain (apps/internal/testdomain). In a service (template.lock) it
# records examples = removed, so updates render the template without them.
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

mapfile -t blocks < <(grep -rlF --exclude-dir=.git --exclude-dir=examples --exclude=remove-examples.sh -- 'examples: begin' . || true)
for f in "${blocks[@]}"; do sed -i '/examples: begin/,/examples: end/d' "$f"; done

if [ -f domains/domains.go ]; then
  module_re=$(printf '%s' "$module" | sed 's/[.[\*^$/]/\\&/g')
  pkgs=$(find examples -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | paste -sd'|')
  sed -i -E -e "/^[[:space:]]*\"${module_re}\\/examples(\\/[a-z]+)?\"\$/d" \
    -e "/^[[:space:]]*(${pkgs:-none})\\.Domain\\(\\),?[[:space:]]*(\\/\\/.*)?\$/d" \
    -e "/make remove-examples deletes the examples/d" domains/domains.go
  gofmt -w domains/domains.go
fi
rm -rf examples
if [ -f template.lock ]; then
  sed -i -e 's/^examples = .*/examples = removed/' -e '/^foundation = /s/ examples\( \|$\)/\1/' template.lock
fi

# bench/ is a module of its own and template-only (make new-service
# leaves it behind); its example benchmarks go with the template.
left=$(grep -rlF --include='*.go' --exclude-dir=.git --exclude-dir=bench -- "\"$module/examples" . || true)
[ -z "$left" ] || die "these still import the examples; remove their use of them: $left"

cat <<MSG
remove-examples: deleted examples/, their lines in domains/domains.go and their blocks in ${#blocks[@]} files
(docs/openapi.yaml's paths and schemas).

Next: go build ./... && make test, then add your domain under domains/ and one line in
domains/domains.go (docs/domains.md).
MSG
