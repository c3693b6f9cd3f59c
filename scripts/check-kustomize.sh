#!/usr/bin/env bash
# check-kustomize.sh renders the kustomize base and every overlay under
# deploy/k8s with a pinned kustomize (built once from the Go module proxy
# into a cache outside the checkout), so a layout kubectl cannot apply
# (a cycle, a missing file, a bad patch) fails make lint.
set -euo pipefail
cd "$(dirname "$0")/.."
KUSTOMIZE_VERSION=v5.8.1
GO=${GO:-go}
dir=${JULY_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/july-template/tools}/kustomize-$KUSTOMIZE_VERSION
bin=$dir/kustomize
if [[ ! -x $bin ]]; then
  echo "check-kustomize: installing kustomize $KUSTOMIZE_VERSION into $dir (once)" >&2
  (cd / && GOWORK=off GOFLAGS=-mod=mod GOBIN=$dir $GO install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION")
fi
n=0
while IFS= read -r -d '' k; do
  d=$(dirname "$k")
  out=$("$bin" build "$d" 2>&1) || { echo "check-kustomize: kustomize build $d failed:" >&2; echo "$out" >&2; exit 1; }
  grep -q '^kind: ' <<<"$out" || { echo "check-kustomize: kustomize build $d rendered no object" >&2; exit 1; }
  n=$((n + 1))
done < <(find deploy/k8s -name kustomization.yaml -print0 | sort -z)
[[ $n -ge 2 ]] || { echo "check-kustomize: found $n kustomizations under deploy/k8s (expected the base and the monitoring overlay)" >&2; exit 1; }
echo "check-kustomize: kustomize $KUSTOMIZE_VERSION renders all $n kustomizations under deploy/k8s"
