#!/usr/bin/env python3
"""Tool calls through `ward serve`: in a live sandbox, against the floor, a fresh sandbox per
call, and spawning `ward run` per call.

Each call runs `true`. Measured in the same run:
  - live: exec.run in the sandbox's live sandbox (forked by its exec server);
  - floor: the same client, daemon and protocol with `ward serve --ward-binary` pointed at
    ward_exec_floor, which serves the exec channel with a bare posix_spawn (no sandbox);
    live and floor alternate in rounds, one call at a time and with N concurrent clients;
  - fresh: exec.run with "fresh": true (a sandbox of its own per call);
  - spawn: `ward run -- true` per call.
Every sandbox writes its audit trail (to a temporary XDG_STATE_HOME).

    python3 bench/serve_bench.py --ward build/bin/ward [--floor build/bin/ward_exec_floor]
        [--calls 400] [--clients 4] [--rounds 8] [--state-dir DIR] [--json]

The daemon keeps a small record per exec in its state directory (default: beside its socket in
a temporary directory; pass --state-dir on a tmpfs, like $XDG_RUNTIME_DIR on a desktop, to see
the cost without a disk file system).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients",
                                "python"))
from ward_client import WardClient  # noqa: E402


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


def summary(name, latencies, wall):
    n = len(latencies)
    return {
        "mode": name,
        "calls": n,
        "calls_per_s": n / wall if wall > 0 else float("nan"),
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
    }


def run_threads(workers, calls, fn):
    """Runs `calls` calls of fn() spread over `workers` threads; returns (latencies, wall)."""
    lat = []
    lock = threading.Lock()
    errors = []
    per = [calls // workers + (1 if i < calls % workers else 0) for i in range(workers)]

    def worker(i):
        try:
            ctx = fn.setup(i) if hasattr(fn, "setup") else None
            mine = []
            for _ in range(per[i]):
                t0 = time.perf_counter()
                fn(ctx)
                mine.append(time.perf_counter() - t0)
            with lock:
                lat.extend(mine)
        except Exception as e:  # report, do not hang the benchmark
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return lat, wall


class Daemon:
    def __init__(self, ward, tmp, name, env, ws, extra, state_root):
        self.sock = os.path.join(tmp, name + ".sock")
        args = [ward, "serve", "--socket", self.sock] + extra
        if state_root:
            args += ["--state-dir", os.path.join(state_root, name)]
        self.proc = subprocess.Popen(args, cwd=ws, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        for _ in range(250):
            if os.path.exists(self.sock):
                break
            time.sleep(0.02)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Calls:
    """exec.run of `true` from one client per worker, each in a sandbox of its own."""

    def __init__(self, sock, ws, fresh=False):
        self.sock, self.ws, self.fresh = sock, ws, fresh
        self.workers = {}  # kept across rounds: one client and one sandbox per worker

    def setup(self, i):
        if i not in self.workers:
            cl = WardClient(self.sock)
            sbx = cl.create_sandbox(self.ws)
            for _ in range(3):
                self(cl, sbx)
            self.workers[i] = (cl, sbx)
        return self.workers[i]

    def __call__(self, ctx, sbx=None):
        cl, sbx = (ctx, sbx) if sbx else ctx
        opts = {"notify": False}
        if self.fresh:
            opts["fresh"] = True
        r = cl.run(sbx, ["true"], **opts)
        assert r["status"] == "exited" and r["exit_code"] == 0, r


def interleaved(modes, workers, calls, rounds):
    """Runs each mode's calls in `rounds` rounds, the modes taking turns; per mode the latencies
    and the wall time of its rounds."""
    out = {name: ([], 0.0) for name, _ in modes}
    for _ in range(rounds):
        for name, fn in modes:
            lat, wall = run_threads(workers, max(workers, calls // rounds), fn)
            out[name] = (out[name][0] + lat, out[name][1] + wall)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ward", required=True, help="the ward binary")
    ap.add_argument("--floor", help="ward_exec_floor (default: beside the ward binary)")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--state-dir", help="the daemons' state directory (created; removed after)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    ward = os.path.abspath(args.ward)
    floor = args.floor
    if not floor:
        bindir = os.path.dirname(ward)
        for cand in (os.path.join(bindir, "ward_exec_floor"),
                     os.path.join(bindir, "..", "bench", "ward_exec_floor")):
            if os.path.exists(cand):
                floor = cand
                break
    if not floor or not os.path.exists(floor):
        raise SystemExit("ward_exec_floor not found: build it (cmake --build build --target "
                         "ward_exec_floor) or pass --floor")
    floor = os.path.abspath(floor)

    tmp = tempfile.mkdtemp(prefix="ward-serve-bench-")
    ws = os.path.join(tmp, "ws")
    os.mkdir(ws)
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "state"))
    env.pop("XDG_RUNTIME_DIR", None)
    state_root = tempfile.mkdtemp(prefix="ward-serve-bench-", dir=args.state_dir) \
        if args.state_dir else None
    results = []
    fs = subprocess.run(["stat", "-f", "-c", "%T", args.state_dir or tmp], capture_output=True,
                        text=True).stdout.strip() or "?"
    daemons = []
    try:
        live = Daemon(ward, tmp, "live", env, ws, [], state_root)
        daemons.append(live)
        flo = Daemon(ward, tmp, "floor", env, ws, ["--ward-binary", floor], state_root)
        daemons.append(flo)
        with WardClient(live.sock) as c:
            v = c.version()
        modes = [("live", Calls(live.sock, ws)), ("floor", Calls(flo.sock, ws))]
        serial = interleaved(modes, 1, max(50, args.calls // 2), args.rounds)
        for name in ("live", "floor"):
            results.append(summary("%s, 1 client" % name, *serial[name]))
        wide = interleaved(modes, args.clients, args.calls, args.rounds)
        for name in ("live", "floor"):
            results.append(summary("%s, %d clients" % (name, args.clients), *wide[name]))
        lat, wall = run_threads(1, max(20, args.calls // 10), Calls(live.sock, ws, fresh=True))
        results.append(summary("fresh, 1 client", lat, wall))
        lat, wall = run_threads(args.clients, max(40, args.calls // 4),
                                Calls(live.sock, ws, fresh=True))
        results.append(summary("fresh, %d clients" % args.clients, lat, wall))

        def spawn(ctx):
            subprocess.run([ward, "run", "--", "true"], cwd=ws, env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lat, wall = run_threads(args.clients, max(40, args.calls // 4), spawn)
        results.append(summary("spawn `ward run -- true`, %d workers" % args.clients, lat, wall))
    finally:
        for d in daemons:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        if state_root:
            shutil.rmtree(state_root, ignore_errors=True)

    meta = {"ward": v.get("version"), "cpus": os.cpu_count(), "kernel": os.uname().release,
            "state_fs": fs}
    by = {r["mode"]: r for r in results}
    ratio = by["live, 1 client"]["p50_ms"] / by["floor, 1 client"]["p50_ms"]
    if args.json:
        print(json.dumps({"meta": meta, "results": results, "live_over_floor_p50": ratio},
                         indent=2))
        return 0
    print("ward %s, %s CPUs, kernel %s, daemon state on %s" % (meta["ward"], meta["cpus"],
                                                              meta["kernel"], meta["state_fs"]))
    print("| mode | calls | calls/s | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print("| %s | %d | %.1f | %.2f | %.2f |" % (r["mode"], r["calls"], r["calls_per_s"],
                                                    r["p50_ms"], r["p99_ms"]))
    print("\nlive / floor, p50 of one exec.run: %.2fx" % ratio)
    print("live, %d clients: %.0f calls/s (floor %.0f)" % (
        args.clients, by["live, %d clients" % args.clients]["calls_per_s"],
        by["floor, %d clients" % args.clients]["calls_per_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
