#!/usr/bin/env bash
# template.sh makes a service from the template and lets it take the
# template's later fixes (docs/template.md). copier and cruft are the model:
# the service records the template commit it was made from (template.lock),
# and an update re-applies the template's changes since then, file by file
# on the foundation paths only, with a three-way merge.
#
#   template.sh new MODULE DIR [keep|remove]       make new-service
#   template.sh status                             make template-status
#   template.sh update                             make template-update
#   template.sh render REPO REV MODULE kept|removed OUT
#   template.sh apply SERVICE_DIR REPO COMMIT      (update runs the target's copy)
#
# Environment: TEMPLATE (a git URL or local path) overrides the lock's
# template_source; TO (a revision, default HEAD) is the target of status and
# update; TEMPLATE_REV (default HEAD) the commit new renders.
# TEMPLATE_UPDATE_FAULT (drop-edit, write-domain) plants a fault in apply for
# scripts/check-template-update.sh, which must then fail; never set it else.
#
# A rendering is what a service gets of one template commit: git archive
# (uncommitted edits never leak), the template-only paths dropped, the module
# path rewritten (rename.sh), the examples removed when the service removed
# them (remove-examples.sh). An update renders the recorded version and the
# target with the TARGET's scripts (update runs the target's copy of this
# file), so a fix to the rendering is not taken for a change of the service.
set -euo pipefail

# The path classes, by directory (docs/template.md). Foundation: what an
# update re-applies (and examples/ while the service keeps the examples).
# Template-only: never copied into a service. Everything else is the
# service's: domains/, README.md, template.lock and any path not listed; a
# service takes a foundation path over by adding it to the lock's service.
FOUNDATION=".ci .dockerignore .gitignore .golangci.yml Makefile go.mod go.sum go.work go.work.sum redocly.yaml CHANGELOG.md adapters apps contracttests core deploy docs internal scripts tools"
TEMPLATE_ONLY="bench scripts/check-template-update.sh"
RESERVED="domains README.md template.lock" # never written, whatever a list says

here=$(cd "$(dirname "$0")" && pwd)
tmp="" # the scratch directory of status, update and apply (removed on exit)
log() { printf 'template: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

command -v go >/dev/null || die "the go command is not on PATH; install Go 1.26"
command -v git >/dev/null || die "git is not on PATH; install git"

# under PATH ENTRY...: PATH is one of the entries or inside one.
under() {
  local p=$1 e
  shift
  for e in "$@"; do [[ $p == "$e" || $p == "$e"/* ]] && return 0; done
  return 1
}

# lock_get FILE KEY: the value of "KEY = value" in FILE (empty if absent).
lock_get() { awk -v k="$2" '$1 == k && $2 == "=" { sub(/^[^=]*= ?/, ""); print; exit }' "$1"; }

# write_lock FILE: the lock from the variables of the same names.
write_lock() {
  {
    echo "# template.lock: the template this service was made from and which paths an"
    echo "# update owns (docs/template.md). make template-update moves template_version;"
    echo "# list under service the foundation paths you take over."
    echo "template_module = $template_module"
    echo "template_source = $template_source"
    echo "template_version = $template_version"
    echo "module = $module"
    echo "examples = $examples"
    echo "foundation = $foundation"
    echo "service = $service"
    echo "template_only = $TEMPLATE_ONLY"
    if [ -n "${pending_version:-}" ]; then
      echo "pending_version = $pending_version"
      echo "pending_conflicts = $pending_conflicts"
    fi
  } >"$1"
}

# read_lock DIR: the lock's keys into variables of the same names.
read_lock() {
  lock=$1/template.lock
  [ -f "$lock" ] || die "no template.lock in $1: this is not a service made by make new-service (the template itself has none)"
  local k
  for k in template_module template_source template_version module examples foundation service pending_version pending_conflicts; do
    printf -v "$k" '%s' "$(lock_get "$lock" "$k")"
  done
  [[ $template_version =~ ^[0-9a-f]{40}$ ]] || die "$lock: template_version \"$template_version\" is not a 40-hex commit"
  [ -n "$module" ] || die "$lock: no module line"
  [[ $examples == kept || $examples == removed ]] || die "$lock: examples is \"$examples\", want kept or removed"
}

# repo_of SOURCE TMP: a git directory holding the template's history: a
# local path as it is, a URL cloned (bare) into TMP.
repo_of() {
  if [ -d "$1" ] && git -C "$1" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$1" && pwd)
  else
    git clone -q --bare "$1" "$2/source.git" || die "cannot clone the template from $1: set TEMPLATE to a reachable URL or a local clone"
    echo "$2/source.git"
  fi
}

# commit_of REPO REV: REV as a 40-hex commit of REPO.
commit_of() {
  git -C "$1" rev-parse -q --verify "$2^{commit}" 2>/dev/null ||
    die "$2 is not a commit of the template at $1 (fetch it there, or set TEMPLATE to a clone that has it)"
}

# render REPO REV MODULE EXAMPLES OUT: the service's view of one commit.
render() {
  local repo=$1 rev=$2 mod=$3 ex=$4 out=$5 p from
  mkdir -p "$out"
  git -C "$repo" archive --format=tar "$rev" | tar -xf - -C "$out"
  for p in $TEMPLATE_ONLY; do
    if [ -f "$out/$p/go.mod" ] && [ -f "$out/go.work" ]; then go work edit -dropuse="./$p" "$out/go.work"; fi
    rm -rf "${out:?}/$p"
  done
  from=$(awk '$1 == "module" { print $2; exit }' "$out/go.mod")
  if [ "$from" != "$mod" ]; then bash "$here/rename.sh" "$mod" "$out" >/dev/null; fi
  if [ "$ex" = removed ] && [ -d "$out/examples" ]; then bash "$here/remove-examples.sh" "$out" >/dev/null; fi
}

has_markers() { grep -qE '^(<<<<<<<|>>>>>>>)( |$)' "$1"; }

# hash_files NAME DIR: the SHA-1 of every file of DIR (a rendered tree, or
# a service's tracked and unignored files) into the associative array NAME,
# by path: one sha1sum for all, so comparing three trees costs no process
# per file.
hash_files() {
  local -n into=$1
  local h f
  while read -r h f; do into[$f]=$h; done < <(
    cd "$2"
    if [ -e .git ]; then
      git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done
    else
      find . -type f -printf '%P\0'
    fi | xargs -0 -r sha1sum
  )
}

# foundation_paths ARRAY...: the paths of the arrays' keys under the
# foundation roots and not the service's, sorted.
foundation_paths() {
  local name f
  for name in "$@"; do
    local -n arr=$name
    for f in "${!arr[@]}"; do
      # shellcheck disable=SC2086 # the lists are space-separated paths
      if under "$f" $roots && ! under "$f" $service; then printf '%s\n' "$f"; fi
    done
    unset -n arr
  done | sort -u
}

# service_readme FILE: the service's own README, in place of the
# template's (README.md is the service's; an update never writes it).
service_readme() {
  cat >"$1" <<EOF
# ${module##*/}

A July service (\`$module\`), made from the July service template
(\`$template_module\` at ${template_version:0:12}, recorded in
[template.lock](template.lock)). Say here what it does and who calls it.

## Run it

\`\`\`sh
make run    # Postgres, Redis, migrations, api and relay on 127.0.0.1; prints a token and curl examples
\`\`\`

[docs/running.md](docs/running.md) has the steps by hand and what \`make run\`
does on a shared server. Each binary prints its settings with \`-h\`
([docs/configuration.md](docs/configuration.md)).

## Test it

\`\`\`sh
make test           # every change: lint, -race, every test but the scenarios
make ci             # every change, before merging: the scenarios, supply-chain scan, OpenAPI client, fuzzing, the run check, the DR drill
make ci-foundation  # after make template-update, or when make template-status shows drift: pooler, supply-chain checks, containers, PostgreSQL matrix
\`\`\`

## Layout

Your domains live in \`domains/<name>/\` and are listed in
\`domains/domains.go\` (\`All()\`); [docs/domains.md](docs/domains.md) shows
the shape (config read before the transaction, the transaction in a use
case, authorization, an event and its consumer). Everything else is the
template's foundation: \`core/\`, \`adapters/\`, \`apps/\`, \`contracttests/\`,
\`deploy/\`, \`docs/\`, \`scripts/\`.

## Taking the template's fixes

\`\`\`sh
make template-status   # foundation files you changed; whether the template has a newer version
make template-update   # re-applies the template's changes since your version (three-way merge)
\`\`\`

Read the template's [CHANGELOG.md](CHANGELOG.md) before you take a release;
[docs/template.md](docs/template.md) says how to resolve a conflict and how
to take a foundation file over.
EOF
}

cmd_new() {
  [ $# -ge 2 ] && [ $# -le 3 ] || die "usage: make new-service MODULE=example.com/team/service DIR=../service [EXAMPLES=keep|remove]"
  module=$1
  local dir=$2 want=${3:-remove} repo commit
  [[ $module =~ ^[a-z0-9][a-z0-9.-]*\.[a-z]{2,}(/[A-Za-z0-9._~-]+)+$ ]] ||
    die "MODULE \"$module\" is not a module path like example.com/team/service"
  case $want in keep | kept) examples=kept ;; remove | removed) examples=removed ;; *) die "EXAMPLES=$want: want keep or remove" ;; esac
  repo=$(git -C "$here/.." rev-parse --show-toplevel)
  [ ! -f "$repo/template.lock" ] || die "$repo has a template.lock: it is a service; run make new-service in the template"
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then die "DIR $dir exists and is not empty: choose a new directory"; fi
  commit=$(commit_of "$repo" "${TEMPLATE_REV:-HEAD}")
  local dirty
  dirty=$(git -C "$repo" status --porcelain --untracked-files=no)
  [ -z "$dirty" ] || log "warning: the template has uncommitted changes; they are not in the service, made from commit ${commit:0:12}"
  template_source=$(git -C "$repo" remote get-url origin 2>/dev/null || echo "$repo")
  template_module=$(git -C "$repo" show "$commit:go.mod" | awk '$1 == "module" { print $2; exit }')
  template_version=$commit
  foundation=$FOUNDATION
  [ "$examples" = removed ] || foundation="$foundation examples"
  service=$RESERVED

  render "$repo" "$commit" "$module" "$examples" "$dir"
  write_lock "$dir/template.lock"
  service_readme "$dir/README.md"
  git -C "$dir" init -q
  git -C "$dir" add -A
  git -C "$dir" commit -q -m "$module: made from template ${commit:0:12} (examples $examples)"

  local abs
  abs=$(cd "$dir" && pwd)
  printf 'new-service: %s in %s, from template %s (examples %s).\n\nNext:\n' "$module" "$abs" "${commit:0:12}" "$examples"
  printf '  cd %s && make test          # the inner loop; make ci is the service gate\n' "$dir"
  local step f
  for step in \
    "domains/domains.go|add your domain under domains/<name>/ and one line in All() (docs/domains.md)" \
    "README.md|a starter: say what the service does and who calls it" \
    "deploy/k8s/base/kustomization.yaml|name the images (template-api, ...) and the Secret for your service; also deploy/docker-compose.yml" \
    "docs/template.md|make template-status and make template-update take the template's later fixes"; do
    f=${step%%|*}
    if [ -e "$abs/$f" ]; then printf '  %-32s %s\n' "$f" "${step#*|}"; fi
  done
}

cmd_status() {
  local svc repo target drift=() f
  svc=$(pwd)
  read_lock "$svc"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/template-status.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  repo=$(repo_of "${TEMPLATE:-$template_source}" "$tmp")
  commit_of "$repo" "$template_version" >/dev/null
  roots=$foundation
  render "$repo" "$template_version" "$module" "$examples" "$tmp/base"
  local -A B=() O=()
  hash_files B "$tmp/base"
  hash_files O "$svc"
  while IFS= read -r f; do
    if [ -z "${O[$f]-}" ]; then
      drift+=("deleted  $f")
    elif [ -z "${B[$f]-}" ]; then
      drift+=("added    $f")
    elif [ "${O[$f]}" != "${B[$f]}" ]; then drift+=("changed  $f"); fi
  done < <(foundation_paths B O)
  echo "template-status: $module, made from $template_module at ${template_version:0:12}"
  if [ ${#drift[@]} -eq 0 ]; then
    echo "drift: none (the foundation is the template's)"
  else
    echo "drift: ${#drift[@]} foundation files differ from the template's at ${template_version:0:12} (make ci-foundation tests them):"
    printf '  %s\n' "${drift[@]}"
  fi
  [ -z "$pending_version" ] || echo "pending: an update to ${pending_version:0:12} has conflicts in: $pending_conflicts (docs/template.md, Resolving a conflict)"
  target=$(commit_of "$repo" "${TO:-HEAD}")
  if [ "$target" = "$template_version" ]; then
    echo "template: up to date (${TO:-HEAD} of ${TEMPLATE:-$template_source})"
  elif git -C "$repo" merge-base --is-ancestor "$target" "$template_version"; then
    echo "template: ${TO:-HEAD} (${target:0:12}) is older than this service's version"
  else
    echo "template: ${TO:-HEAD} is ${target:0:12}, $(git -C "$repo" rev-list --count "$template_version..$target") commits newer; make template-update takes it"
    local log
    log=$(git -C "$repo" diff "$template_version" "$target" -- CHANGELOG.md)
    [ -z "$log" ] || { echo "CHANGELOG.md since ${template_version:0:12}:"; sed -n 's/^+\([^+]\)/  \1/p' <<<"$log"; }
  fi
}

# update finds the target and hands over to the target's copy of this file
# (apply), so the target's rules render both sides.
cmd_update() {
  local svc repo target
  svc=$(pwd)
  read_lock "$svc"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/template-update.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  repo=$(repo_of "${TEMPLATE:-$template_source}" "$tmp")
  target=$(commit_of "$repo" "${TO:-${pending_version:-HEAD}}")
  commit_of "$repo" "$template_version" >/dev/null
  mkdir -p "$tmp/rules"
  git -C "$repo" archive --format=tar "$target" scripts | tar -xf - -C "$tmp/rules"
  bash "$tmp/rules/scripts/template.sh" apply "$svc" "$repo" "$target"
}

cmd_apply() {
  [ $# -eq 3 ] || die "usage: template.sh apply SERVICE_DIR REPO COMMIT"
  local svc=$1 repo=$2 target=$3 f
  read_lock "$svc"
  if [ -n "$pending_version" ] && [ "$pending_version" != "$target" ]; then
    die "an update to ${pending_version:0:12} is pending (conflicts in: $pending_conflicts): resolve it and run make template-update, or abandon it with git checkout -- . and remove the pending_ lines of template.lock"
  fi
  if [ -z "$pending_version" ]; then
    local dirty
    dirty=$(git -C "$svc" status --porcelain)
    [ -z "$dirty" ] || die "the service has uncommitted changes: commit or stash them first (an update writes into the working tree):
$dirty"
  fi
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/template-apply.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "rendering ${template_version:0:12} and ${target:0:12} for $module (examples $examples)"
  render "$repo" "$template_version" "$module" "$examples" "$tmp/base"
  render "$repo" "$target" "$module" "$examples" "$tmp/target"
  foundation=$FOUNDATION
  [ "$examples" = removed ] || foundation="$foundation examples"
  roots=$foundation

  # The plan: one action per path the template changed, checked in full
  # before anything is written.
  local plan=() b t o
  local -A B=() T=() O=()
  hash_files B "$tmp/base"
  hash_files T "$tmp/target"
  hash_files O "$svc"
  while IFS= read -r f; do
    b=${B[$f]-} t=${T[$f]-} o=${O[$f]-} # empty: absent
    if [[ " $pending_conflicts " == *" $f "* ]]; then
      if [ -n "$o" ] && has_markers "$svc/$f"; then plan+=("unresolved $f"); fi
      continue # resolved by the service: kept as it is
    fi
    if [ "$b" = "$t" ] || [ "$o" = "$t" ]; then
      if [ "${TEMPLATE_UPDATE_FAULT:-}" = drop-edit ] && [ "$o" != "$t" ]; then plan+=("take $f"); fi
      continue # the template did not change it, or the service has its version
    fi
    if [ "$b" = "$o" ]; then
      if [ -n "$t" ]; then plan+=("take $f"); else plan+=("delete $f"); fi
    elif [ -z "$o" ]; then
      plan+=("restore $f") # deleted here, changed there
    elif [ -z "$t" ]; then
      plan+=("orphan $f") # changed here, deleted there
    elif [ "${TEMPLATE_UPDATE_FAULT:-}" = drop-edit ]; then
      plan+=("take $f")
    elif [[ $f == go.sum || $f == */go.sum || $f == go.work.sum ]]; then
      plan+=("union $f")
    else
      plan+=("merge $f")
    fi
  done < <(foundation_paths B T O)

  local a p
  for a in "${plan[@]}"; do
    p=${a#* }
    # shellcheck disable=SC2086
    if under "$p" $RESERVED $service || ! under "$p" $roots; then
      die "refusing the update: it would write $p, which is not a foundation path (template.lock); nothing was written"
    fi
  done

  local taken=() added=() deleted=() merged=() conflicts=() tidy=()
  for a in "${plan[@]}"; do
    f=${a#* } b=$tmp/base/$f t=$tmp/target/$f o=$svc/$f
    case ${a%% *} in
      take)
        [ -e "$o" ] && taken+=("$f") || added+=("$f")
        mkdir -p "$(dirname "$o")" && cp -p "$t" "$o"
        ;;
      delete)
        rm -f "$o" && deleted+=("$f")
        rmdir -p "$(dirname "$o")" 2>/dev/null || true
        ;;
      restore)
        mkdir -p "$(dirname "$o")" && cp -p "$t" "$o"
        conflicts+=("$f (deleted here, changed in the template: the template's version written; delete it again or keep it)")
        ;;
      orphan) conflicts+=("$f (changed here, deleted in the template: yours kept; delete it or keep it)") ;;
      unresolved) conflicts+=("$f (still has conflict markers)") ;;
      union)
        LC_ALL=C sort -u "$o" "$t" >"$tmp/union"
        cmp -s "$o" "$tmp/union" || { cat "$tmp/union" >"$o" && merged+=("$f"); }
        tidy+=("$(dirname "$f")")
        ;;
      merge)
        [ -e "$b" ] || b=/dev/null # added on both sides
        cp -p "$o" "$tmp/before"
        if git merge-file -L "$f (service)" -L "template ${template_version:0:12}" -L "template ${target:0:12}" "$o" "$b" "$t"; then
          cmp -s "$o" "$tmp/before" || merged+=("$f") # a re-run merges again to the same
        else
          conflicts+=("$f (conflict markers)")
        fi
        ;;
    esac
  done
  if [ "${TEMPLATE_UPDATE_FAULT:-}" = write-domain ]; then echo "// fault" >>"$svc/domains/domains.go"; fi

  local d
  for d in "${tidy[@]}"; do
    if [ -f "$svc/$d/go.mod" ] && ! has_markers "$svc/$d/go.mod"; then
      # A failed tidy is a conflict, so the lock does not move over a
      # module graph that does not resolve.
      (cd "$svc/$d" && GOWORK=off go mod tidy) || conflicts+=("$d/go.mod (go mod tidy failed, above: fix go.mod, run it there)")
    fi
  done

  echo "template-update: ${template_version:0:12} -> ${target:0:12} ($module, examples $examples): ${#taken[@]} updated, ${#added[@]} added, ${#deleted[@]} deleted, ${#merged[@]} merged, ${#conflicts[@]} conflicts"
  [ ${#added[@]} -eq 0 ] || printf '  added    %s\n' "${added[@]}"
  [ ${#deleted[@]} -eq 0 ] || printf '  deleted  %s\n' "${deleted[@]}"
  [ ${#merged[@]} -eq 0 ] || printf '  merged   %s\n' "${merged[@]}"
  template_only=$TEMPLATE_ONLY
  if [ ${#conflicts[@]} -gt 0 ]; then
    printf '  CONFLICT %s\n' "${conflicts[@]}"
    pending_version=$target
    pending_conflicts=$(for c in "${conflicts[@]}"; do printf '%s ' "${c%% (*}"; done)
    pending_conflicts=${pending_conflicts% }
    write_lock "$lock"
    echo "template-update: resolve the conflicts (edit, git add), then run make template-update again: template.lock moves to ${target:0:12} once none is left (docs/template.md)"
    exit 1
  fi
  template_version=$target pending_version="" pending_conflicts=""
  write_lock "$lock"
  echo "template-update: template.lock at ${target:0:12}. Next: review (git diff), make test, make ci-foundation, commit."
}

# main dispatches. It is called with exit on one line: an update rewrites
# this very file, and bash would go on reading the new one at the old offset.
main() {
  cmd=${1:-}
  [ $# -eq 0 ] || shift
  case $cmd in
    new) cmd_new "$@" ;;
    status) cmd_status ;;
    update) cmd_update ;;
    apply) cmd_apply "$@" ;;
    render)
      [ $# -eq 5 ] || die "usage: template.sh render REPO REV MODULE kept|removed OUT"
      render "$1" "$(commit_of "$1" "$2")" "$3" "$4" "$5"
      ;;
    *) die "usage: template.sh new|status|update (make new-service, make template-status, make template-update; docs/template.md)" ;;
  esac
}
main "$@"; exit
