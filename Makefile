# simlab: `make run` starts every service, `make test` runs every test. Both install what they need.
SHELL := /bin/bash
NODE_MODULES_STAMP := node_modules/.simlab-stamp

.PHONY: run test build deps bench bench-lincheck sim sim-long typecheck clean fuzz load soak

# Reinstall from the lock file whenever it changes (or node_modules is missing).
$(NODE_MODULES_STAMP): package-lock.json package.json
	npm ci --no-audit --no-fund
	@touch $(NODE_MODULES_STAMP)

deps: $(NODE_MODULES_STAMP)

build: deps
	npx tsc -p tsconfig.json

run: build
	node dist/src/main.js

test: build
	node scripts/run-tests.mjs $(TESTS)

typecheck: deps
	npx tsc -p tsconfig.json --noEmit

bench: build
	node scripts/run-benchmarks.mjs

clean:
	rm -rf dist .tap
