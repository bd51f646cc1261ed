# Thin entry points; the logic lives in scripts/ and in each package's own Makefile.
# Every package (server, sdk-*, conformance, bench) answers: setup, generate, check-generated,
# lint, test. bench's `setup` only builds its load client; the peers it measures against
# are installed by `make bench` alone.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PACKAGES := server $(patsubst %/Makefile,%,$(wildcard sdk-python/Makefile sdk-typescript/Makefile sdk-go/Makefile conformance/Makefile bench/Makefile))
# What a release publishes: each builds its artefact into <pkg>/dist/ with `make -C <pkg> dist`.
DIST_PACKAGES := server sdk-python sdk-typescript sdk-go

.PHONY: help setup run serve test lint generate check-generated check-spec conformance bench dist

help:
	@echo "make run              start the reference server on SQLite at http://localhost:3001"
	@echo "make test             set up everything, then lint, check-spec and every package's tests"
	@echo "make setup            install toolchains and dependencies (idempotent)"
	@echo "make lint             validate and lint openapi.yaml, lint every package"
	@echo "make generate         regenerate all code derived from openapi.yaml"
	@echo "make check-generated  fail if any generated code is stale"
	@echo "make check-spec       the spec gate: lint, drift, breaking changes, hashes, schemathesis"
	@echo "make conformance      run every SDK's worker loop against the server (scenario matrix)"
	@echo "make dist             build every release artefact into <pkg>/dist/ ($(DIST_PACKAGES))"
	@echo "make bench [QUICK=1]  measure throughput, latency and memory"
	@echo "packages: $(PACKAGES)"

setup:
	@scripts/setup.sh
	@scripts/install-tools.sh
	@for p in $(PACKAGES); do $(MAKE) --no-print-directory -C $$p setup || exit 1; done

run: setup
	.venv/bin/orch8-server $(ARGS)

serve: run

# SPEC_LINTED=1: the spec's validation and lint run in check-spec beside this (make test).
lint: setup
	@$(if $(SPEC_LINTED),echo "lint: openapi.yaml is validated and linted by check-spec",scripts/lint-spec.sh)
	@for p in $(PACKAGES); do $(MAKE) --no-print-directory -C $$p lint || exit 1; done

# openapi.sdk.json (the SDK facts of openapi.yaml) first: every SDK generator reads it.
generate: setup
	@.venv/bin/python scripts/gen_sdk_facts.py openapi.sdk.json
	@for p in $(PACKAGES); do $(MAKE) --no-print-directory -C $$p generate || exit 1; done

check-generated: setup
	@scripts/check-drift.sh openapi.sdk.json openapi.sdk.json "make generate" \
		bash -c '.venv/bin/python scripts/gen_sdk_facts.py "$$OUT/openapi.sdk.json"'
	@for p in $(PACKAGES); do $(MAKE) --no-print-directory -C $$p check-generated || exit 1; done

check-spec: setup
	@scripts/check-spec.sh

# Set-up, then lint, the spec gate and every package's tests side by side (scripts/run-tests.sh).
test: setup
	@scripts/run-tests.sh lint check-spec $(PACKAGES)

conformance: setup
	@$(MAKE) --no-print-directory -C conformance conformance

bench: setup
	@$(MAKE) --no-print-directory -C bench bench QUICK=$(QUICK)

# Every package named in DIST_PACKAGES must have a `dist` target: a missing one fails here,
# named, before anything is built (never skipped).
dist: setup
	@missing=(); for p in $(DIST_PACKAGES); do \
		{ $(MAKE) --no-print-directory -C $$p -pRrq : 2>/dev/null || true; } | grep -q '^dist:' || missing+=($$p); \
	done; \
	if [ $${#missing[@]} -gt 0 ]; then \
		for p in "$${missing[@]}"; do echo "make dist: $$p/Makefile has no 'dist' target" >&2; done; \
		exit 1; \
	fi
	@for p in $(DIST_PACKAGES); do \
		echo "=== dist: $$p"; \
		$(MAKE) --no-print-directory -C $$p dist || { echo "make dist: $$p failed" >&2; exit 1; }; \
	done
	@echo; echo "release artefacts:"; for p in $(DIST_PACKAGES); do \
		ls -1d $$p/dist/*.whl $$p/dist/*.tar.gz $$p/dist/*.tgz $$p/dist/*.zip $$p/dist/goproxy 2>/dev/null; \
	done | sed 's/^/  /'
