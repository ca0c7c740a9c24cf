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

.PHONY: all deps deps-check configure build test sanitize format format-check demo clean

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
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

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

demo:
	@echo "make demo arrives with the pdf2md workload"

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
