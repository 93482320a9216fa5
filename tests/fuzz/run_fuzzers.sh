#!/usr/bin/env bash
# Builds the libFuzzer targets of the parsers of untrusted input with clang (ASan + UBSan) straight
# from their sources and runs each for a bounded time. Registered in ctest as fuzz.parsers.
#
#   tests/fuzz/run_fuzzers.sh [WORK_DIR]
#
# Environment: FUZZ_SECONDS (per target, default 5), FUZZ_TARGETS (names without _fuzzer,
# default all), FUZZ_CXX (default clang++, then clang++-14), FUZZ_JOBS (parallel compiles,
# default 2), FUZZ_MAX_LEN (default 20000 bytes).
# Exit status: 0 clean, 1 a crash / sanitizer report / invariant failure / build error,
# 77 no clang with libFuzzer here (ctest reports the test as skipped).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-${TMPDIR:-/tmp}/ward-fuzz}
seconds=${FUZZ_SECONDS:-5}
jobs=${FUZZ_JOBS:-2}
max_len=${FUZZ_MAX_LEN:-20000}

# The one list of sources (tests/fuzz/sources.txt, shared with the CMake build), plus the
# built-in profiles the policy loader extends, generated from profiles/*.toml as the build does.
mapfile -t sources < <(grep -v -e '^#' -e '^[[:space:]]*$' "$here/sources.txt")

cxx=${FUZZ_CXX:-}
if [ -z "$cxx" ]; then
  for c in clang++ clang++-14; do
    if command -v "$c" >/dev/null 2>&1; then cxx=$c; break; fi
  done
fi
if [ -z "$cxx" ]; then
  echo "fuzz: no clang++ found; skipping" >&2
  exit 77
fi

mkdir -p "$work/obj" "$work/bin" "$work/corpus" "$work/artifacts" "$work/gen" || exit 1
profiles="$work/gen/builtin_profiles_data.cc"
cmake -DOUT="$profiles" -DDIR="$root/profiles" -P "$root/cmake/embed_profiles.cmake" || {
  echo "fuzz: generating the built-in profiles failed" >&2
  exit 1
}
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
cxxflags=(-std=c++20 -O1 -g "${san[@]}" -I"$root/src" -I"$here" -DTOML_HEADER_ONLY=1 -Wall -Wextra
  -Wno-missing-field-initializers)

# Can this compiler link a fuzzer at all (libclang-rt-*-dev installed)?
probe="$work/probe.cc"
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  >"$probe"
if ! "$cxx" "${cxxflags[@]}" -fsanitize=fuzzer "$probe" -o "$work/probe" >"$work/probe.log" 2>&1
then
  echo "fuzz: $cxx cannot build libFuzzer targets (see $work/probe.log); skipping" >&2
  exit 77
fi

# Rebuild an object when its source or any header it may include is newer.
newest_header=$(ls -t "$root"/src/*/*.h "$here"/*.h "$here/sources.txt" "$0" 2>/dev/null | head -n1)
needs_build() {  # target, sources...
  local out=$1
  shift
  [ -e "$out" ] || return 0
  [ "$newest_header" -nt "$out" ] && return 0
  local s
  for s in "$@"; do [ "$s" -nt "$out" ] && return 0; done
  return 1
}

compile() {  # source object
  if needs_build "$2" "$1"; then
    "$cxx" "${cxxflags[@]}" -fsanitize=fuzzer-no-link -c "$1" -o "$2" 2>"$2.log" || {
      cat "$2.log" >&2
      return 1
    }
  fi
}

failed=0
pids=()
objects=()
for s in "${sources[@]}" "$profiles"; do
  case $s in /*) ;; *) s="$root/$s" ;; esac
  o="$work/obj/$(echo "${s#"$root"/}" | tr / _).o"
  objects+=("$o")
  compile "$s" "$o" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
if [ $failed -ne 0 ]; then
  echo "fuzz: building the parser sources failed" >&2
  exit 1
fi

targets=()
if [ -n "${FUZZ_TARGETS:-}" ]; then
  for t in $FUZZ_TARGETS; do targets+=("$t"); done
else
  for f in "$here"/*_fuzzer.cc; do
    t=$(basename "$f" _fuzzer.cc)
    targets+=("$t")
  done
fi

for t in "${targets[@]}"; do
  src="$here/${t}_fuzzer.cc"
  bin="$work/bin/${t}_fuzzer"
  if [ ! -f "$src" ]; then
    echo "fuzz: no such target: $t" >&2
    exit 1
  fi
  if needs_build "$bin" "$src" "${objects[@]}"; then
    "$cxx" "${cxxflags[@]}" -fsanitize=fuzzer "$src" "${objects[@]}" -o "$bin" || {
      echo "fuzz: building $t failed" >&2
      exit 1
    }
  fi
done

for t in "${targets[@]}"; do
  corpus="$work/corpus/$t"
  mkdir -p "$corpus"
  seeds=()
  [ -d "$here/corpus/$t" ] && seeds=("$here/corpus/$t")
  log="$work/$t.log"
  # New inputs go to the work corpus (first directory); the committed seeds stay untouched.
  if "$work/bin/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" \
    "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    runs=$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    echo "fuzz: $t ok (${runs:-?} runs in ${seconds}s)"
  else
    failed=1
    echo "fuzz: $t FAILED; log $log, artifacts $work/artifacts/$t-*" >&2
    tail -n 40 "$log" >&2
  fi
done
exit $failed
