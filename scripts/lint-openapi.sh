#!/usr/bin/env bash
# lint-openapi.sh lints docs/openapi.yaml with @redocly/cli (pinned, from the
# npm registry, installed once into a cache outside the checkout) against
# redocly.yaml: the recommended rules, zero errors and zero warnings.
set -euo pipefail
cd "$(dirname "$0")/.."

REDOCLY_VERSION=2.77.0
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/july-template/redocly-$REDOCLY_VERSION
bin=$CACHE/node_modules/.bin/redocly
if [[ ! -x $bin ]]; then
  command -v npm >/dev/null || { echo "lint-openapi: npm is needed (Debian: apt-get install nodejs npm)" >&2; exit 1; }
  mkdir -p "$CACHE"
  npm install --prefix "$CACHE" --no-audit --no-fund --silent "@redocly/cli@$REDOCLY_VERSION" >&2
fi
out=$("$bin" lint --config redocly.yaml --format=stylish docs/openapi.yaml 2>&1) || { echo "$out" >&2; echo "lint-openapi: docs/openapi.yaml has lint errors (above)" >&2; exit 1; }
if grep -qE '^\s+[0-9]+:[0-9]+\s+warning' <<<"$out"; then
  echo "$out" >&2; echo "lint-openapi: docs/openapi.yaml has lint warnings (above); fix them or turn the rule off in redocly.yaml with the reason" >&2; exit 1
fi
echo "lint-openapi: docs/openapi.yaml: @redocly/cli $REDOCLY_VERSION recommended rules, no errors or warnings"
