# Makefile: a thin wrapper over CMake and scripts/ (as neovim's); `make help` lists the targets.

ARGS ?=
# Quieter nested builds: cmake runs make under us.
MAKEFLAGS += --no-print-directory

.PHONY: all build run stop admin load test chaos bench bench-cluster fuzz experiments screenshots docker-check lint format clean help

all: build ## the default: same as build

build: ## install missing packages, build into build/ (SECKILL_SANITIZE=1: build-asan/, SECKILL_LAB=OFF: build-nolab/, SECKILL_RELEASE=1: build-release/)
	scripts/deps.sh
	scripts/build.sh

run: ## start Redis, PostgreSQL, server and worker under run/dev (SECKILL_INSTANCES=N: N servers behind nginx); Ctrl-C stops them
	scripts/run.sh

stop: ## stop what `make run` started (from another terminal)
	scripts/run.sh stop

admin: ## seckill-admin against the running `make run` (ARGS='reconcile', ARGS='buyer-token 7')
	scripts/admin.sh $(ARGS)

load: ## fire ab (or TOOL=wrk) at ITEM=, or at an unlisted item of its own (TOKEN=, STOCK=, KEEP=1), of the running `make run`, and audit it (N=, C=, D=, URL=)
	scripts/load.sh

test: ## the whole suite on free ports (ARGS='-L unit' go to ctest; SECKILL_SANITIZE=1)
	scripts/test.sh $(ARGS)

chaos: ## only the fault tests (Redis, PostgreSQL, server and worker killed, SIGTERM); make test runs them too
	scripts/test.sh -R 'chaos|shutdown|worker|sweep'

bench: ## the purchase path against the HTTP ceiling, then on a Redis Cluster (BENCH_CLUSTER=0: not); writes run/results/ (RECORD=1: docs/PERFORMANCE.md, SCALING.md)
	loadtest/seckill-lab bench $(ARGS)
	[ "$${BENCH_CLUSTER:-1}" = 0 ] || [ -n "$(ARGS)" ] || [ -n "$${BENCH_ONLY:-}" ] || loadtest/seckill-lab bench-cluster

bench-cluster: ## only the Redis Cluster part of make bench: docs/SCALING.md's table (RECORD=1 writes it)
	loadtest/seckill-lab bench-cluster

experiments: ## the oversell lab under load into run/results/ (RECORD=1: loadtest/results/; STRATEGY=, SCENARIO=, REPLAY_000=1)
	loadtest/seckill-lab experiments

screenshots: ## renew the README's screenshots (docs/screenshot-*.png) from the browser test (FROM_LAST_RUN=1: its last run's)
	scripts/screenshots.sh

fuzz: ## fuzz the request parsers with libFuzzer for FUZZ_SECONDS (default 60)
	scripts/fuzz.sh

docker-check: ## build the image (base from debootstrap, no registry) and buy through it, alone and under docker-compose (as root; about 4 min cold)
	scripts/docker_check.sh

.PHONY: install-check
install-check: ## docs/PRODUCTION.md tried on a clean Debian 12 root: install, migrate, nginx TLS, a purchase, reconcile (as root; about 10 min)
	scripts/install_check.sh

lint: ## shellcheck, clang-format check, docker-compose files validation
	scripts/lint.sh

format: ## clang-format the C sources in place
	@command -v clang-format >/dev/null || scripts/deps.sh clang-format
	find service -name '*.[ch]' -exec clang-format -i {} +

clean: ## remove the build folders
	rm -rf build build-asan build-nolab build-release

help: ## list the targets
	@awk -F ':.*## ' '/^[a-z-]+:.*## / { printf "  make %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
