# Thin convenience wrapper around CMake/CTest.

BUILD          ?= build
JOBS           ?= $(shell nproc)
BUILD_TYPE     ?= RelWithDebInfo
GENERATOR      ?= Ninja

SANITIZE_BUILD ?= build-asan
SANITIZERS     ?= address,undefined
SANITIZE_TESTS ?= .

CLANG_FORMAT   ?= clang-format
# Tracked (and new, not ignored) C++ sources.
FORMAT_FILES    = git ls-files -z --cached --others --exclude-standard -- '*.h' '*.cc'

.PHONY: all deps deps-check configure build test test-python wheel test-wheel sanitize sanitize-subset format format-check demo clean

all: build

deps:
	@bash scripts/install-deps.sh

deps-check: deps

# Configure only when the build tree does not exist yet; afterwards ninja
# re-runs CMake by itself whenever a CMakeLists.txt or a source glob changes.
$(BUILD)/build.ninja: | deps-check
	cmake -S . -B $(BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: $(BUILD)/build.ninja

build: deps-check $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: deps build
	@$(MAKE) --no-print-directory sanitize-subset
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)
	@$(MAKE) --no-print-directory test-python
	@$(MAKE) --no-print-directory test-wheel

# The Python package (python/): scripts/python-env.sh creates .venv with pinned versions and
# installs the package from this checkout (incremental build in build-python/), then pytest.
test-python: deps
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) bash scripts/python-env.sh
	.venv/bin/ruff check python
	.venv/bin/ruff format --check python
	.venv/bin/mypy
	.venv/bin/python -m pytest python/tests -q --durations=15

# The self-contained wheel for Python users (dist/*.whl): needs no compiler or -dev package
# where it is installed; `pip install --find-links dist 'rayorch-cpp[ray]'`.
wheel: deps
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) bash scripts/build-wheel.sh

# The wheel installed alone into a fresh venv runs the quickstart from outside the checkout,
# and its extension needs only the C and C++ runtime (incremental build in build-wheel/).
test-wheel: deps
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) bash tests/package/wheel_check.sh

# The runtime and executor tests again under AddressSanitizer + UndefinedBehaviorSanitizer
# and the executor tests under ThreadSanitizer. Only these targets are built in the
# sanitizer trees, so `make test` stays well within a CI budget on two cores.
ASAN_BUILD     ?= build-asan
TSAN_BUILD     ?= build-tsan
# A test's target is its path under tests/ with '/' as '_' (tests/runtime/rule_reduce_test.cc:
# runtime_rule_reduce_test).
ASAN_TARGETS   ?= smoke_test runtime_engine_grains_test runtime_rule_call_input_test \
                  runtime_rule_expand_test runtime_rule_filter_test runtime_rule_reduce_test \
                  runtime_rule_broadcast_test runtime_scenarios_shapes_test \
                  runtime_scenarios_failures_test runtime_scenarios_aborts_test \
                  runtime_scenarios_schedule_test runtime_recovery_policies_test \
                  runtime_recovery_losses_test \
                  execution_local_executor_actors_test execution_local_executor_batching_test \
                  execution_local_executor_failures_test execution_local_executor_runs_test \
                  execution_local_executor_timeouts_test \
                  execution_schedule_independence_test \
                  execution_schedule_independence_inputs_test \
                  execution_schedule_independence_failures_test \
                  api_misuse_compile_test api_misuse_contracts_test api_misuse_failures_test
TSAN_TARGETS   ?= execution_local_executor_actors_test execution_local_executor_batching_test \
                  execution_local_executor_failures_test execution_local_executor_runs_test \
                  execution_local_executor_timeouts_test \
                  execution_schedule_independence_test \
                  execution_schedule_independence_inputs_test \
                  execution_schedule_independence_failures_test
SANITIZE_BUILD_TYPE ?= Debug
# The sanitizer trees compile the library as a unity build (sources batched into a few
# translation units): half its compile time on two cores; the test files are one source
# each, and the main tree (build/) keeps one translation unit per source, so a missing
# include still fails there.
SANITIZE_UNITY ?= -DCMAKE_UNITY_BUILD=ON

sanitize-subset: deps
	@test -f $(ASAN_BUILD)/build.ninja || \
	  cmake -S . -B $(ASAN_BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=$(SANITIZE_BUILD_TYPE) \
	    -DRAYORCH_SANITIZE=address,undefined $(SANITIZE_UNITY) > /dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target $(ASAN_TARGETS)
	@set -e; export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1; \
	for t in $(ASAN_TARGETS); do \
	  echo "asan+ubsan: $$t"; $(ASAN_BUILD)/$$t --gtest_brief=1; done
	@test -f $(TSAN_BUILD)/build.ninja || \
	  cmake -S . -B $(TSAN_BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=$(SANITIZE_BUILD_TYPE) \
	    -DRAYORCH_SANITIZE=thread $(SANITIZE_UNITY) > /dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target $(TSAN_TARGETS)
	@set -e; export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1; \
	for t in $(TSAN_TARGETS); do \
	  echo "tsan: $$t"; $(TSAN_BUILD)/$$t --gtest_brief=1; done

sanitize: deps
	@test -f $(SANITIZE_BUILD)/build.ninja || \
	  cmake -S . -B $(SANITIZE_BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DRAYORCH_SANITIZE=$(SANITIZERS)
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	@export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1; \
	if ctest --test-dir $(SANITIZE_BUILD) --print-labels | grep -qE '^[[:space:]]+sanitize$$'; then \
	  echo "ctest -L sanitize"; \
	  ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j$(JOBS) -L sanitize; \
	else \
	  echo "ctest -R '$(SANITIZE_TESTS)'"; \
	  ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j$(JOBS) -R '$(SANITIZE_TESTS)'; \
	fi

format:
	$(FORMAT_FILES) | xargs -0 -r $(CLANG_FORMAT) -i

format-check:
	$(FORMAT_FILES) | xargs -0 -r $(CLANG_FORMAT) --dry-run --Werror

# The document workload on a generated corpus: known text on every page, a long tail of
# page counts and one corrupt file (which pdf2md reports and skips: its exit status 1 is
# the expected outcome here; 2 or 3 would be real errors).
DEMO_DIR       ?= out/demo
DEMO_DOCS      ?= 24
DEMO_SEED      ?= 1

demo: deps-check $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target rayorch_cli
	rm -rf $(DEMO_DIR)
	$(BUILD)/rayorch make-samples $(DEMO_DIR)/samples --docs $(DEMO_DOCS) --seed $(DEMO_SEED)
	@status=0; \
	$(BUILD)/rayorch pdf2md $(DEMO_DIR)/samples -o $(DEMO_DIR)/markdown \
	  --report $(DEMO_DIR)/report.json --trace $(DEMO_DIR)/trace.json || status=$$?; \
	if [ $$status -gt 1 ]; then echo "demo: pdf2md failed with exit status $$status" >&2; exit $$status; fi
	$(BUILD)/rayorch check-samples $(DEMO_DIR)/samples $(DEMO_DIR)/markdown
	@echo "demo: Markdown in $(DEMO_DIR)/markdown/, failures in $(DEMO_DIR)/markdown/failures.jsonl,"
	@echo "demo: metrics in $(DEMO_DIR)/report.json, timeline in $(DEMO_DIR)/trace.json (chrome://tracing)"

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
