#!/bin/sh
# Regenerates bench/hot_functions.txt: the functions of ward's own binary that a
# `ward run -- true` executes, which the link places side by side (src/cli/CMakeLists.txt), so
# that a run's processes touch ~220 pages of ward's code side by side rather than ~370 spread
# over its 4 MB. Over N runs as root and N more as RUN_AS (unprivileged, when given), perf
# samples where the supervisor, sandbox init and the command before its exec spend their user
# time (cpu-clock, one sample per 50 us of CPU) and records every page fault. It prints the
# sampled functions' symbol names, the most sampled first, then the functions whose code
# faulted in outside the hot section and were not sampled (run once, such as static
# initialisers and constructors: too short for a sample, but each costs a fault), in the order
# they first faulted. A function missing from the list still works; it only sits among the cold
# code. Rerun after large changes to what a run executes:
#   bench/hot_functions.sh [WARD] [N] > list     env: RUN_AS=<uid>, KEEP=<list>
# A function found by its fault no longer faults once it is placed, so a list made from a build
# that already used an earlier one loses it again: KEEP=bench/hot_functions.txt appends the
# names of that list which the new one lacks and which the runs still execute (counted with a
# uprobe on each over a third pass of the runs, so that code a run stopped executing leaves the
# list). From scratch: make the list, rebuild, rerun with KEEP until no name is added.
# Needs perf (Debian: linux-perf) and a ward built with its symbols (the default build).
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
N=${2:-200}
case $N in '' | *[!0-9]*) echo "N must be a number of runs, got '$N'" >&2; exit 2 ;; esac
command -v perf >/dev/null 2>&1 || { echo "perf is missing (Debian: apt-get install linux-perf)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root (perf samples the unprivileged runs too)" >&2; exit 1; }
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
# The uprobes of KEEP's check are removed however the script ends.
trap 'perf probe -q -d "ward_hot:*" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home" "$dir/home-user"
stage_ward "$dir"
pre=""
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir/ws" "$dir/home-user"
  pre=$(as_user "$RUN_AS")
fi
cat > "$dir/runs.sh" <<EOF
set -e
cd "$dir/ws"
i=0
while [ \$i -lt $N ]; do
  env HOME="$dir/home" "$WARD" run -- true
  [ -z "$pre" ] || $pre env HOME="$dir/home-user" "$WARD" run -- true
  i=\$((i + 1))
done
EOF
if [ -n "${KEEP:-}" ] && [ ! -r "$KEEP" ]; then
  echo "KEEP: cannot read the list '$KEEP'" >&2
  exit 2
fi
echo "# Made by bench/hot_functions.sh ($N runs$([ -z "$pre" ] || echo " as root and as uid $RUN_AS" )): one symbol per line, most sampled first, then those found by their faults$([ -z "${KEEP:-}" ] || echo ", then those kept from the list before")."
# Two passes: with both events in one recording, runs slowed down a thousandfold on the
# development microVM.
perf record -q -o "$dir/samples.data" -e cpu-clock:u -c 50000 -- sh "$dir/runs.sh" >&2
perf record -q -o "$dir/faults.data" -e page-faults:u -c 1 -d -- sh "$dir/runs.sh" >&2
# Symbols in ward's own binary only; what the link cannot place (PLT entries, _init, _fini,
# _start) is left out, and so is any name a linker script pattern could misread. A fault is an
# instruction fetch when its address is where the instruction is (within its length); its file
# offset (the address less the load bias of its process's mapping of the code) places it in or
# out of the hot section.
perf script -i "$dir/samples.data" -F event,ip,sym,dso --no-demangle 2>/dev/null > "$dir/script"
perf script -i "$dir/faults.data" -F event,ip,sym,dso,addr --no-demangle --show-mmap-events \
  2>/dev/null >> "$dir/script"
readelf -S -W "$WARD" > "$dir/sections"
nm --defined-only "$WARD" > "$dir/defined"
python3 - "$WARD" "$dir/script" "$dir/sections" "$dir/defined" "${KEEP:-}" "$dir/candidates" \
  > "$dir/names" <<'PY'
import collections, re, sys
ward, script, sections, defined, keep, candidates = sys.argv[1:7]
hot = None
for line in open(sections):
    f = line.replace("[ ", "[").split()
    if len(f) > 5 and f[1] == ".text.hot_ward":
        hot = (int(f[4], 16), int(f[4], 16) + int(f[5], 16))
name_ok = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
skip = {"_init", "_fini", "_start"}
def clean(sym):
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    return sym if name_ok.match(sym) and sym not in skip else None
sampled = collections.Counter()
faulted = []
mmap = re.compile(r"PERF_RECORD_MMAP2 (\d+)/\d+: \[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+|0) .* r-xp (\S+)$")
# "EVENT: [ADDR SYM (DSO)] IP SYM (DSO)": a fault's address, then where the code was.
sample = re.compile(r"^\s*(\S+):\s+(?:([0-9a-f]+) (\S+) \((\S+)\)\s+)?([0-9a-f]+) (\S+) \((\S+)\)$")
last_bias = None
for line in open(script, errors="replace"):
    line = line.rstrip("\n")
    m = mmap.search(line)
    if m:
        if m.group(4) == ward:
            last_bias = int(m.group(2), 16) - int(m.group(3), 16)
        continue
    m = sample.match(line)
    if not m or m.group(7) != ward:
        continue
    event, addr, ip, sym = m.group(1), m.group(2), int(m.group(5), 16), clean(m.group(6))
    if sym is None:
        continue
    if event.startswith("cpu-clock"):
        sampled[sym] += 1
    elif event.startswith("page-faults") and addr and last_bias is not None:
        # The runs follow one another, and init and the command are clones of their supervisor:
        # the last mapping of the binary seen is the one the fault happened in. Without a hot
        # section (a build without WARD_HOT_TEXT), every function that faulted is found.
        a = int(addr, 16)
        cold = hot is None or not hot[0] <= ip - last_bias < hot[1]
        if 0 <= a - ip <= 16 and cold and sym not in faulted:
            faulted.append(sym)
names = [s for s, _ in sorted(sampled.items(), key=lambda kv: (-kv[1], kv[0]))]
names += [s for s in faulted if s not in sampled]
for name in names:
    print(name)
# KEEP's names that the new list lacks, with their addresses, for the uprobe check below.
with open(candidates, "w") as out:
    if keep:
        have = set(names)
        symbols = {}
        for line in open(defined):
            f = line.split()
            if len(f) == 3 and f[1] in "tTwW":
                symbols.setdefault(f[2], f[0])
        for line in open(keep):
            sym = clean(line.strip())
            if sym and sym not in have and sym in symbols:
                out.write(f"{sym} {symbols[sym]}\n")
                have.add(sym)
PY
cat "$dir/names"
if [ -s "$dir/candidates" ]; then
  # One uprobe per candidate (in batches: one perf call per name is slow), the runs again under
  # perf stat, and the names whose probe fired, in KEEP's order.
  awk '{ printf "-a ward_hot:k%d=0x%s ", NR, $2; if (NR % 60 == 0) printf "\n" } END { printf "\n" }' \
    "$dir/candidates" | while read -r probes; do
    # shellcheck disable=SC2086  # $probes is a list of options, split on purpose
    [ -z "$probes" ] || perf probe -q -x "$WARD" $probes >&2
  done
  perf stat -x, -o "$dir/kept.csv" -e 'ward_hot:*' -- sh "$dir/runs.sh" >&2
  awk -F, 'NR == FNR { if ($3 ~ /^ward_hot:k/ && $1 ~ /^[0-9]+$/ && $1 > 0) { sub(/^ward_hot:k/, "", $3); hit[$3] = 1 }; next }
           hit[FNR] { print $1 }' "$dir/kept.csv" FS=' ' "$dir/candidates"
fi
