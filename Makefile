# SPDX-License-Identifier: MIT
#
# The two commands of the README, and the developer targets around them. Each
# target that needs packages runs scripts/bootstrap.sh first (a no-op when all
# are installed). See docs/development.md.
#
#   make demo          set everything up and show pyprofd on a live workload
#   make test          set everything up, check format and lint, build, run every
#                      test (ctest, ASan+UBSan), then the unit tests and the
#                      agent's live test under ThreadSanitizer
#   make / make release  the optimised binary a user runs: build-release/pyprofd
#   make build         developer build: build/pyprofd (gcc, debug, -Werror)
#   make install       make release, then install it under PREFIX (default
#                      /usr/local; DESTDIR is honoured): the binaries, man
#                      pages, bash completion, config, systemd unit
#   make package       a Debian package of the release build (cpack -G DEB):
#                      build-release/pyprofd_VERSION_ARCH.deb
#   make unit          unit tests only, no privileges needed
#   make kube-tools    the Kubernetes tools rootfs (make test builds it)
#   make fuzz          run every fuzz target for FUZZ_SECONDS each
#   make format        reformat; make format-check only checks
#   make lint          clang-tidy and cppcheck
#   make tsan          unit tests and the agent's live test under ThreadSanitizer
#   make clean

MAKEFLAGS    += --no-print-directory
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
SRC_FILES     = $(shell git ls-files -co --exclude-standard -- '*.c' '*.h' 2>/dev/null)
LINT_FILES    = $(shell git ls-files -co --exclude-standard -- 'agent/*.c' 'exporters/*.c' 'cli/*.c' 2>/dev/null)

PREFIX       ?= /usr/local

.PHONY: all release install package build bootstrap rootfs kube-tools test tsan unit demo fuzz \
	format format-check lint clean

all: release

release: bootstrap
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

install: bootstrap
	@cmake --preset release -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build --preset release -j $(JOBS)
	@cmake --install build-release --prefix $(PREFIX)

package: bootstrap
	@cmake --preset release -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
	@cmake --build --preset release -j $(JOBS)
	@cd build-release && cpack -G DEB

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev -j $(JOBS)

rootfs: bootstrap
	@scripts/python-rootfs.sh >/dev/null
	@scripts/python-rootfs.sh --bullseye >/dev/null

# the Kubernetes tools rootfs (kubectl, kustomize, python3-kubernetes) that
# tests/deploy and tests/kube check manifests and the API fake against
kube-tools: bootstrap
	@scripts/python-rootfs.sh --kube-tools >/dev/null

# CI runs exactly this (.ci/run). The format check and the linters first (they
# take the gcc -Werror build's compile commands, so both compilers' warnings
# gate a change), then every label under ASan+UBSan, then ThreadSanitizer on
# the unit tests and the agent's live test (the threads that share state).
test: build rootfs kube-tools
	@$(MAKE) format-check
	@$(MAKE) lint
	@cmake --preset asan-ubsan >/dev/null
	@cmake --build --preset asan-ubsan -j $(JOBS)
	@ctest --preset asan-ubsan -j $(JOBS)
	@$(MAKE) tsan

tsan: bootstrap rootfs
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)
	@ctest --preset tsan -j $(JOBS)

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
	@run-clang-tidy -quiet -j $(JOBS) -p build $(LINT_FILES) >build/clang-tidy.log 2>&1 || \
	    { grep -E 'error:|warning:' build/clang-tidy.log | sort -u; exit 1; }
	@# cppcheck 2.10 cannot parse PROMTEXT_LABELS' compound literals in loops
	@# (internalAstError, a parser limit, not a finding)
	@cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	    --inline-suppr --std=c11 -D__GNUC__ -D_GNU_SOURCE -Iagent -j $(JOBS) \
	    --suppress=missingIncludeSystem \
	    --suppress=internalAstError:exporters/push/push.c \
	    --suppress=internalAstError:exporters/pull/views.c $(LINT_FILES)
	@echo "lint: clang-tidy and cppcheck clean on $(words $(LINT_FILES)) files"

clean:
	@rm -rf build build-asan build-tsan build-release
