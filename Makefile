# SPDX-License-Identifier: MIT
#
# The two commands of the README, and the developer targets around them. Each
# target that needs packages runs scripts/bootstrap.sh first (a no-op when all
# are installed). See docs/development.md.
#
#   make demo          set everything up and show pyprofd on a live workload
#   make test          set everything up, build, run every test (ctest)
#   make / make build  developer build: build/pyprofd (gcc, -Werror)
#   make unit          unit tests only, no privileges needed
#   make fuzz          run every fuzz target for FUZZ_SECONDS each
#   make format        reformat; make format-check only checks
#   make lint          clang-tidy and cppcheck
#   make clean

MAKEFLAGS    += --no-print-directory
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
SRC_FILES     = $(shell git ls-files -co --exclude-standard -- '*.c' '*.h' 2>/dev/null)
LINT_FILES    = $(shell git ls-files -co --exclude-standard -- 'agent/*.c' 'exporters/*.c' 'cli/*.c' 2>/dev/null)

.PHONY: all build bootstrap rootfs test unit demo fuzz format format-check lint clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev -j $(JOBS)

rootfs: bootstrap
	@scripts/python-rootfs.sh >/dev/null

# CI runs exactly this (.ci/run). Builds the gcc -Werror build too, so both
# compilers' warnings gate a change, then runs every label under ASan+UBSan.
test: build rootfs
	@cmake --preset asan-ubsan >/dev/null
	@cmake --build --preset asan-ubsan -j $(JOBS)
	@ctest --preset asan-ubsan -j $(JOBS)

unit: bootstrap
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev -j $(JOBS)
	@ctest --preset dev -L unit -j $(JOBS)

demo: build rootfs
	@scripts/demo.sh

fuzz: bootstrap
	@cmake --preset asan-ubsan >/dev/null
	@cmake --build --preset asan-ubsan -j $(JOBS)
	@for t in build-asan/tests/fuzz/fuzz_*; do \
	    name=$${t##*/fuzz_}; mkdir -p build-asan/tests/fuzz/corpus/$$name; \
	    echo "== $$name ($(FUZZ_SECONDS) s)"; \
	    $$t -max_total_time=$(FUZZ_SECONDS) build-asan/tests/fuzz/corpus/$$name \
	        tests/fuzz/seeds/$$name || exit 1; \
	done

format: bootstrap
	@clang-format -i $(SRC_FILES)

format-check: bootstrap
	@clang-format --dry-run -Werror $(SRC_FILES) && echo "format-check: $(words $(SRC_FILES)) files ok"

lint: build
	@clang-tidy --quiet -p build $(LINT_FILES)
	@# cppcheck 2.10 cannot parse PROMTEXT_LABELS' compound literals in push.c's
	@# loops (internalAstError, a parser limit, not a finding)
	@cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	    --inline-suppr --std=c11 -D__GNUC__ -D_GNU_SOURCE -Iagent \
	    --suppress=missingIncludeSystem \
	    --suppress=internalAstError:exporters/push/push.c $(LINT_FILES)
	@echo "lint: clang-tidy and cppcheck clean on $(words $(LINT_FILES)) files"

clean:
	@rm -rf build build-asan build-tsan build-release
