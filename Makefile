# ratelab — `make help` lists the targets by audience: the SRE, CI, the lab, building.
SHELL   := /bin/bash
GO      ?= go
BIN     := bin/ratelab
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
SCENARIO ?= hot-tenant
# The tests come in tiers, chosen by build tag (README.md, "Tests"): untagged tests are `make test`
# (what a plain `go test ./...` runs), `faults` the fault tier, `experiment` the experiments.
# The race detector slows tests; the correctness suite takes about 5 minutes on 2 cores.
TEST_FLAGS ?= -race -count=1 -timeout 20m
# The packages whose tests take longest, named first so that they start first: go test runs two
# packages at a time on 2 cores, and the suite ends when its longest package does.
TEST_FIRST := ./run/engine ./studies/simulate ./cmd/ratelab
# The fault tier judges recovery times and tail latency: one test at a time, one package after
# another, so that neither the other tests nor the other packages take its cores.
FAULT_TEST_FLAGS ?= -race -count=1 -timeout 30m -parallel 1
# Experiments run without -race: they measure the machine, not the race detector.
EXPERIMENT_FLAGS ?= -count=1 -v

.DEFAULT_GOAL := help

## help: list the targets, grouped by audience
# A `##@ Title` line opens a group; a `## target: text` line describes the target below it.
.PHONY: help
help:
	@awk '/^##@ /{printf "\n%s:\n", substr($$0, 5); next} /^## /{t=substr($$0, 4); d=t; sub(/:.*/, "", t); sub(/^[^:]*: /, "", d); printf "  %-20s %s\n", t, d}' $(MAKEFILE_LIST)

##@ SRE: see a limiter work and break

## demo: install Redis if needed, build, run the guided story (`ratelab demo`, ~90 s); SCENARIO=name runs that one scenario instead
.PHONY: demo
demo: redis build
ifneq ($(filter command line environment,$(origin SCENARIO)),)
	./$(BIN) run $(SCENARIO)
else
	./$(BIN) demo
endif

## soak: the 30-minute soak scenario (faults every few minutes; exits 3 if memory grows, goroutines leak or a fault does not recover)
.PHONY: soak
soak: redis build
	./$(BIN) run soak

##@ CI: tests and gates

## test: go vet (every tier: no file is excluded by a tag) and the correctness suite with the race detector against real Redis Clusters (~5 min)
.PHONY: test
test: redis wrk gubernator
	$(GO) vet -tags faults,experiment ./...
	$(GO) test $(TEST_FLAGS) $(TEST_FIRST) ./...

## test-faults: the fault tier (tag faults): faults judged on recovery and tail latency, and the tests over ~30 s (every built-in, the demo...); one test at a time (~7 min)
# A package's fault-tier tests are the Test functions of its files tagged `faults`: the loop
# reads them from those files, so a new one runs here without a list to keep.
.PHONY: test-faults
test-faults: redis gubernator
	@rc=0; for dir in $$(grep -rl --include='*_test.go' --exclude-dir=out --exclude-dir=.git '^//go:build faults$$' . | xargs -n1 dirname | sort -u); do \
		tests=$$(grep -l '^//go:build faults$$' $$dir/*_test.go | xargs sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*/\1/p' | paste -sd'|' -); \
		echo "$(GO) test $(FAULT_TEST_FLAGS) -tags faults -run '^($$tests)$$' $$dir"; \
		$(GO) test $(FAULT_TEST_FLAGS) -tags faults -run "^($$tests)$$" $$dir || rc=1; \
	done; exit $$rc

## lint: gofmt, go vet, then ratelab-lint: no production file over 500 lines or function over 80, imports only down the layers (cmd/ratelab-lint/layers.go), docs/architecture.md's package table matching the folders
.PHONY: lint
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags faults,experiment ./...
	$(GO) run ./cmd/ratelab-lint -go '$(GO)'

## perf-check: CI performance gate (ratelab perf-check): build the base (merge base with main; PERF_BASE=REF) and the head, alternate their ci-smoke runs on one local cluster, compare; exit 3 on a regression, naming the metric (~3 min); PERF_AGAINST=DIR compares with a committed baseline instead (days, not builds)
# docs/ci.md has the gate's metrics and thresholds; results/studies/gate-power.md its measured false alarms and power.
PERF_OUT ?= out/perf-check
PERF_REPEAT ?=
PERF_BASE ?=
PERF_AGAINST ?=
PERF_CHECK_FLAGS ?=
.PHONY: perf-check
perf-check: redis build
	@rm -rf $(PERF_OUT)
	./$(BIN) perf-check --out $(PERF_OUT) --go '$(GO)' $(if $(PERF_REPEAT),--repeat $(PERF_REPEAT)) \
		$(if $(PERF_BASE),--base $(PERF_BASE)) $(if $(PERF_AGAINST),--against $(PERF_AGAINST)) $(PERF_CHECK_FLAGS)

## perf-check-baseline: rerun ci-smoke PERF_REPEAT times (default 6) and store its summaries as the committed baseline of `make perf-check PERF_AGAINST=results/baselines/ci-smoke` (commit the result)
PERF_BASELINE ?= results/baselines/ci-smoke
.PHONY: perf-check-baseline
perf-check-baseline: redis build
	@rm -rf $(PERF_OUT)-baseline
	@# A repetition that failed an SLO (exit 3) is kept and said so: review before committing.
	@./$(BIN) run ci-smoke --repeat $(or $(PERF_REPEAT),6) --out $(PERF_OUT)-baseline -q || { c=$$?; [ $$c -eq 3 ] || exit $$c; \
		echo "WARNING: a repetition failed an SLO (see above); the machine was busy or the build is broken"; }
	rm -rf $(PERF_BASELINE) && mkdir -p $(PERF_BASELINE)
	@for d in $(PERF_OUT)-baseline/rep-*; do mkdir -p $(PERF_BASELINE)/$$(basename $$d) && cp $$d/summary.json $(PERF_BASELINE)/$$(basename $$d)/; done
	@echo "baseline: $$(ls -d $(PERF_BASELINE)/rep-* | wc -l) summaries in $(PERF_BASELINE); review and commit them"

## fuzz: run every native fuzz target for FUZZTIME each (default 10s); new failures land in testdata/fuzz
# -fuzzminimizetime 5x: FuzzTwinMatchesRedis calls Redis per request, and minimising each new
# interesting input for the default 60 s stalls the run (and ends it with a spurious deadline error).
FUZZTIME ?= 10s
FUZZ_TARGETS := ./scenarios:FuzzParse ./cluster:FuzzParseClusterNodes ./cluster:FuzzParseReplOffsets \
	./results:FuzzReadTimeseries ./limiter:FuzzDecodeReply ./limiter:FuzzParseTariffs ./limiter:FuzzTwinMatchesRedis \
	./workload/trace:FuzzDecode
.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5x $$pkg; done

##@ Lab: experiments and studies of many runs

## bench: Go benchmarks of the hot paths (COUNT=10 for benchstat), then `ratelab bench`: six sections on one local cluster (needs wrk) -> results/bench/; BENCH_FLAGS='--repeat 5' for medians and ranges
COUNT ?= 1
BENCH_FLAGS ?=
.PHONY: bench
bench: redis wrk build
	$(GO) test -run '^$$' -bench . -benchmem -count $(COUNT) ./...
	./$(BIN) bench --out results/bench $(BENCH_FLAGS)

## validate-model: experiment (tag experiment): the model, calibrated on 1 primary, against runs it never saw (node shares, p99, knees, busiest primary) beside naive baselines (~4 min); out/experiments/validate-model.{txt,json}
# The test's own deadline is 12 min; go test's timeout is 3 min past that.
.PHONY: validate-model
validate-model: redis
	@mkdir -p out/experiments
	set -o pipefail; RATELAB_VALIDATE_JSON=$(CURDIR)/out/experiments/validate-model.json $(GO) test -tags experiment $(EXPERIMENT_FLAGS) -timeout 15m \
		-run '^TestModelPredictsHeldOutRuns$$' ./studies/simulate/ | tee out/experiments/validate-model.txt

## compare-power: experiment (tag experiment): does `ratelab compare` find 2 ms injected in every decision? The resampled power, then 30-120 real runs (~5-15 min); log in out/experiments/
.PHONY: compare-power
compare-power: redis
	@mkdir -p out/experiments
	set -o pipefail; { $(GO) test -tags experiment $(EXPERIMENT_FLAGS) -run '^TestPowerUnderCIStalls$$' ./results/compare && \
		$(GO) test -tags experiment $(EXPERIMENT_FLAGS) -timeout 60m -run '^TestCompareDetectsInjectedDelay$$' ./cmd/ratelab; } | tee out/experiments/compare-power.txt

## gate-power: experiment (tag experiment): the perf gate on this machine: false alarms of one build against itself (20 trials quiet, 20 with a neighbour burning a core) and the delays injected into the head's runs it catches (10 trials each), the committed-baseline gate on the same runs (~2 h); out/experiments/gate-power/
.PHONY: gate-power
gate-power: redis
	@mkdir -p out/experiments/gate-power
	set -o pipefail; $(GO) test -tags experiment $(EXPERIMENT_FLAGS) -timeout 240m -run '^TestGatePower$$' ./studies/gate/ | tee out/experiments/gate-power/log.txt

## regions-sweep: experiment (`ratelab regions`): the regions designs (global, split, rebalance at each T of PERIODS) on one trace, runs of twice the longest T -> out/regions-sweep/ (sweep.md, tradeoff.png, index.html; ~5 min)
PERIODS ?= 250ms,1s,4s,16s
.PHONY: regions-sweep
regions-sweep: redis build
	@rm -rf out/regions-sweep
	./$(BIN) regions --periods $(PERIODS) --out out/regions-sweep

## durability: experiment (`ratelab durability`): each fault (kill-primary, partition) against each durability setting (async, wait, wait-pipeline, min-replicas), eight 20 s runs of the partition built-in -> out/durability/ (durability.md, durability.png, index.html; ~4 min)
.PHONY: durability
durability: redis build
	@rm -rf out/durability
	./$(BIN) durability --out out/durability

##@ Build and install

## build: build bin/ratelab
.PHONY: build
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/ratelab

## image: the ratelab container image (IMAGE, default ratelab:dev): a static binary on an empty base, built without pulling anything (deploy/image)
IMAGE ?= ratelab:dev
.PHONY: image
image:
	GO=$(GO) VERSION=$(VERSION) bash deploy/image/build.sh $(IMAGE)

## redis: install redis-server (and redis-tools) if missing: apt-get on Debian/Ubuntu, brew on macOS
.PHONY: redis
redis:
	@if command -v redis-server >/dev/null 2>&1; then \
		echo "redis-server: $$(redis-server --version | head -n1)"; \
	elif command -v apt-get >/dev/null 2>&1; then \
		SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		echo "installing redis-server with apt-get"; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools >/dev/null && \
		echo "redis-server: $$(redis-server --version | head -n1)"; \
	elif command -v brew >/dev/null 2>&1; then \
		echo "installing redis with brew"; brew install redis; \
	else \
		echo "redis-server is not installed and neither apt-get nor brew is available."; \
		echo "Install Redis 7 (https://redis.io/docs/latest/operate/oss_and_stack/install/) so that redis-server is on PATH, then rerun."; \
		exit 1; \
	fi

## wrk: install wrk (the HTTP load of the bench's gateway section and its test) if missing: apt-get on Debian/Ubuntu, brew on macOS
.PHONY: wrk
wrk:
	@if ! command -v wrk >/dev/null 2>&1; then \
		if command -v apt-get >/dev/null 2>&1; then \
			SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
			echo "installing wrk with apt-get (the bench's HTTP load)"; \
			$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wrk >/dev/null; \
		elif command -v brew >/dev/null 2>&1; then brew install wrk; \
		else echo "wrk is not installed and neither apt-get nor brew is available: install wrk (https://github.com/wg/wrk) so that it is on PATH, then rerun."; exit 1; fi; \
	fi

## gubernator: build bin/gubernatord, gubernator's daemon from its Go module (tools/gubernatord pins v2.13.0) in a module of its own, so ratelab's binary never links it (kind gubernator)
GUBERNATORD := bin/gubernatord
.PHONY: gubernator
gubernator:
	@mkdir -p bin
	cd tools/gubernatord && $(GO) build -o ../../$(GUBERNATORD) .
	@echo "gubernatord: $(GUBERNATORD) (github.com/gubernator-io/gubernator/v2 $$(sed -n 's|.*gubernator-io/gubernator/v2 \(v[^ ]*\).*|\1|p' tools/gubernatord/go.mod))"

## docs: regenerate docs/cli.md, the command reference, from the commands' help (a test fails when it is stale)
.PHONY: docs
docs:
	$(GO) run ./cmd/ratelab gen-docs --file docs/cli.md

## clean: remove build outputs and run directories
.PHONY: clean
clean:
	rm -rf bin out
