# ward: the two commands of the README, and the targets behind them.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# Where `make install` puts ward (DESTDIR: a staging root in front of it, as usual).
PREFIX ?= /usr/local
DESTDIR ?=
# The build `make install` and `make deb` take the binary from: a build directory of its own,
# with the tests not configured, so that installing disturbs neither the test build nor its
# configuration.
RELEASE_BUILD ?= build-release
# A compiler cache, where one is installed, for every build below.
CCACHE := $(shell command -v ccache 2>/dev/null)
ifneq ($(CCACHE),)
LAUNCHER := -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
endif

.PHONY: all deps build demo test test-kernels asan asan-test tsan tsan-test format tidy bench clean fuzz release install \
	uninstall deb

all: build

deps:
	@sh scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(LAUNCHER) $(CMAKE_FLAGS) >/dev/null

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Shows ward doing its main job on the built-in default profile: builds ward alone (not the
# tests), which is all the demo runs.
demo: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target ward
	@sh scripts/demo.sh $(BUILD)/bin/ward

# Builds and runs every test (unit, integration and escape tests, as root and unprivileged),
# but the kernel matrix.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE kernels

# The kernel matrix (tests/kernels/): each kernel of tests/kernels/matrix.txt booted in QEMU,
# the sandbox suites run inside as root and as the test user, on cgroup v2. KERNELS picks
# entries ("6.1 6.12"); KERNEL_TESTS the tests, a ctest -R regex with @ for the identity
# (default: each entry's own, in matrix.txt).
KERNELS ?=
KERNEL_TESTS ?=
KERNEL_EXCLUDE ?=
test-kernels: build
	@sh scripts/deps.sh kernels
	cd $(BUILD) && WARD_KERNEL_TESTS='$(KERNEL_TESTS)' WARD_KERNEL_EXCLUDE='$(KERNEL_EXCLUDE)' ctest --output-on-failure -L kernels \
		$(if $(strip $(KERNELS)),-R '^kernels\.($(subst $(eval) ,|,$(subst .,\.,$(strip $(KERNELS)))))$$')

# The binary that is installed: optimised as the tested build is (RelWithDebInfo), then
# stripped by scripts/install.sh with its debug information split off.
release: deps
	cmake -S . -B $(RELEASE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARD_BUILD_TESTS=OFF \
		$(LAUNCHER) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(RELEASE_BUILD) -j $(JOBS) --target ward

# ward, its debug information, manual pages, shell completions and the built-in profiles
# under $(DESTDIR)$(PREFIX) (scripts/install.sh says where each goes).
install: release
	@sh scripts/install.sh install $(RELEASE_BUILD)/bin/ward "$(DESTDIR)" "$(PREFIX)"

uninstall:
	@sh scripts/install.sh uninstall $(RELEASE_BUILD)/bin/ward "$(DESTDIR)" "$(PREFIX)"

# A Debian package of the release build (and its -dbgsym), in $(RELEASE_BUILD)/deb/.
deb: release
	@sh scripts/deb.sh $(RELEASE_BUILD)/bin/ward $(RELEASE_BUILD)/deb

# ASan/UBSan build whose whole test run must be clean.
asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DWARD_SANITIZE=ON $(LAUNCHER) >/dev/null
	cmake --build build-asan -j $(JOBS)

asan-test: asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer build (its own directory) and a run of the tests whose code runs threads:
# unit.audit (the session log's flusher thread), unit.net (the proxy's connection threads, the
# credential broker, the DNS stub), unit.supervisor (the approval broker, its socket and webhook
# channels, file approvals), unit.api (the serve daemon's service and execs), and the sandbox
# suites of `ward run` and `ward serve` as root (the supervisor's log flusher, planning threads,
# notifier and proxy in one process). Under a sanitizer the supervisor forks where it otherwise
# shares its memory with a child (CLONE_VM: the command's clone, the netns helper, the cgroup
# reaper, the serve daemon's `ward run`), so those four paths are covered by the plain build
# only. Not covered: the sandbox suites as the unprivileged user and the escape suite (the
# same threads as root, other boundaries), and sandbox init under TSan beyond its one thread.
# Nothing is suppressed. A process with a report exits 66, which fails its test.
TSAN_TESTS ?= ^(unit\.(net|supervisor|api|audit)\.|integration\.root\.(RunTest|ServeTest|ServeApprovals|ApprovalsTest|EgressTest|NetworkTest|CredsTest|AuditTest)|setup\.stage)
tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARD_TSAN=ON $(LAUNCHER) >/dev/null
	cmake --build build-tsan -j $(JOBS)

tsan-test: tsan
	cd build-tsan && TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1:history_size=4 ctest --output-on-failure -j $(JOBS) -R '$(TSAN_TESTS)'

fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DWARD_FUZZ=ON -DWARD_WERROR=OFF >/dev/null
	cmake --build build-fuzz -j $(JOBS)

format:
	find src tests bench -name '*.h' -o -name '*.cc' -o -name '*.c' | xargs clang-format -i

# clang-tidy over src/ with .clang-tidy's checks. Its exit status is the verdict: it fails on a
# check made an error there (readability-function-size) and on a file clang-tidy cannot parse;
# the other checks only warn. The files are those of the compilation database under src/ (not
# the build tree's generated ones), and for src/cli, built as one translation unit
# (src/cli/CMakeLists.txt), that unit, whose flags (WARD_VERSION...) its files need.
# ASIO_HAS_CO_AWAIT: asio enables coroutines under clang only with <experimental/coroutine>,
# which libstdc++ 12 no longer has; clang has the C++20 ones the GCC build uses.
# TIDY_FILES: regular expressions of the files to check instead (e.g. TIDY_FILES=src/net/proxy).
TIDY_FILES ?= '^$(subst +,\+,$(subst .,\.,$(CURDIR)))/src/' '/src/cli/CMakeFiles/ward\.dir/Unity/'
tidy: build
	run-clang-tidy -p $(BUILD) -j $(JOBS) -quiet -extra-arg=-DASIO_HAS_CO_AWAIT=1 $(TIDY_FILES)

bench: build
	sh bench/startup.sh $(BUILD)/bin/ward

clean:
	rm -rf $(BUILD) $(RELEASE_BUILD) build-asan build-tsan build-fuzz
