#!/usr/bin/env bash
# buildflags.sh prints the -ldflags -X arguments that stamp the service's
# version (git describe), commit and template version into a binary, for
# `go build -ldflags "$(scripts/buildflags.sh)"` (make build,
# scripts/supply-chain.sh; deploy/Dockerfile does the same from its build
# arguments). The template version is template.lock's template_version in a
# service, the template's own commit in the template. VERSION, VCS_REF and
# TEMPLATE_VERSION override each.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
pkg=$(GOWORK=off $GO list -m)/internal/appkit
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
commit=${VCS_REF:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
tv=${TEMPLATE_VERSION:-}
if [[ -z $tv && -f template.lock ]]; then
  tv=$(sed -n 's/^template_version = //p' template.lock)
fi
tv=${tv:-$commit}
echo "-X $pkg.version=$version -X $pkg.commit=$commit -X $pkg.templateVersion=$tv"
