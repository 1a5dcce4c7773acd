# simlab: `make run` starts every service, `make test` runs every test. Both install what they need.
SHELL := /bin/bash
NODE_MODULES_STAMP := node_modules/.simlab-stamp

.PHONY: run test build deps bench bench-lincheck bench-table sim sim-long typecheck clean fuzz load soak wrk format format-check

# Reinstall from the lock file whenever it changes (or node_modules is missing).
$(NODE_MODULES_STAMP): package-lock.json package.json
	npm ci --no-audit --no-fund
	@touch $(NODE_MODULES_STAMP)

deps: $(NODE_MODULES_STAMP)

# The web pages: typechecked (web/tsconfig.json), then bundled by esbuild into dist/web/<page>/; the
# replication node actor bundled into one file (dist/workers/node-actor.bundle.js: faster worker start).
build: deps
	npx tsc -p tsconfig.json
	npx tsc -p web/tsconfig.json
	node scripts/build-web.mjs
	node scripts/build-worker.mjs
	node scripts/build-cli.mjs

run: build
	node dist/src/main.js

test: build
	node scripts/run-tests.mjs $(TESTS)

typecheck: deps
	npx tsc -p tsconfig.json --noEmit

# One formatter for the whole tree (Biome, settings in biome.json): format rewrites files in place,
# format-check only reports the files it would change (test/tidy.test.ts runs the same check).
format: deps
	node_modules/.bin/biome format --write

format-check: deps
	node_modules/.bin/biome format

# wrk drives the HTTP benchmarks (Debian package; installed on first use).
wrk:
	@command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)

bench: build wrk
	node scripts/run-benchmarks.mjs $(BENCH)

bench-lincheck: build
	node scripts/run-benchmarks.mjs lincheck

# Regenerates the README benchmark table (between its bench-table markers) from bench-results.json.
bench-table:
	node scripts/bench-table.mjs

# Replays one deterministic simulation run exactly: make sim SEED=42 [STRATEGY=raft|single_leader|multi_leader|leaderless]
# [TRACE=run.json: also writes the run as a trace file the replication page opens and plays]
SEED ?= 42
STRATEGY ?= raft
sim: build
	node dist/src/replication/swarm/cli.js --seed $(SEED) --strategy $(STRATEGY) --verbose $(if $(TRACE),--trace-out $(TRACE))

# Runs seeds 1..100000 of one strategy's swarm on 2 threads: make sim-long [STRATEGY=leaderless]
sim-long: build
	node dist/src/replication/swarm/cli.js --seed 1 --runs 100000 --jobs 2 --strategy $(STRATEGY)

# Property-based hostile-input fuzzing of every endpoint, many more cases than make test runs.
FUZZ_RUNS ?= 2000
fuzz: build
	FUZZ_RUNS=$(FUZZ_RUNS) node scripts/run-tests.mjs test/fuzz/

# Fixed-concurrency load on each service (wrk), throughput and latency percentiles. Loopback only.
load: build wrk
	node dist/benchmarks/load.js

# Mixed traffic with partitions, pauses and latency toggled, then heal and check convergence and
# that RSS and worker threads return to steady state. make soak DURATION=600 (seconds).
DURATION ?= 600
soak: build
	DURATION=$(DURATION) node dist/benchmarks/soak.js

clean:
	rm -rf dist .tap
