# ward: the two commands of the README, and the targets behind them.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build demo test asan asan-test format tidy bench clean fuzz

all: build

deps:
	@sh scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Shows ward doing its main job on the built-in default profile.
demo: build
	@sh scripts/demo.sh $(BUILD)/bin/ward

# Builds and runs every test (unit, integration and escape tests, as root and unprivileged).
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# ASan/UBSan build whose whole test run must be clean.
asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DWARD_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)

asan-test: asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DWARD_FUZZ=ON -DWARD_WERROR=OFF >/dev/null
	cmake --build build-fuzz -j $(JOBS)

format:
	find src tests bench -name '*.h' -o -name '*.cc' -o -name '*.c' | xargs clang-format -i

# src/cli is one translation unit in the build (src/cli/CMakeLists.txt), so its files are not in
# the compilation database: clang-tidy is given them by name and infers their flags.
tidy: build
	run-clang-tidy -p $(BUILD) -quiet src/ 2>/dev/null || clang-tidy -p $(BUILD) $$(find src -name '*.cc')
	clang-tidy -p $(BUILD) --quiet src/cli/*.cc

bench: build
	sh bench/startup.sh $(BUILD)/bin/ward

clean:
	rm -rf $(BUILD) build-asan build-fuzz
