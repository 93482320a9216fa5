#!/usr/bin/env python3
"""Tool calls per second through `ward serve` versus spawning `ward run` per call.

Each call runs `true` in its own fresh sandbox either way. Measured in the same run:
  - serve, N concurrent clients (one sandbox each): exec.run of `true`, calls/s and p50/p99;
  - serve, one client, one call at a time: p50/p99 latency of one exec.run;
  - spawn, N concurrent workers: `ward run -- true` per call, calls/s and p50/p99;
  - spawn, one at a time: p50/p99.
Both sides write an audit session per call (to a temporary XDG_STATE_HOME).

    python3 bench/serve_bench.py --ward build/bin/ward [--calls 400] [--clients 4]
        [--state-dir DIR] [--json]

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ward", required=True, help="the ward binary")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--state-dir", help="the daemon's state directory (created; removed after)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    ward = os.path.abspath(args.ward)

    tmp = tempfile.mkdtemp(prefix="ward-serve-bench-")
    ws = os.path.join(tmp, "ws")
    os.mkdir(ws)
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "state"))
    env.pop("XDG_RUNTIME_DIR", None)
    sock = os.path.join(tmp, "ward.sock")
    serve_args = [ward, "serve", "--socket", sock]
    state_dir = None
    if args.state_dir:
        state_dir = tempfile.mkdtemp(prefix="ward-serve-bench-", dir=args.state_dir)
        serve_args += ["--state-dir", os.path.join(state_dir, "serve")]
    daemon = subprocess.Popen(serve_args, cwd=ws, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results = []
    fs = subprocess.run(["stat", "-f", "-c", "%T", args.state_dir or tmp], capture_output=True,
                        text=True).stdout.strip() or "?"
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.02)
        with WardClient(sock) as c:
            v = c.version()
            sb = c.create_sandbox(ws)
            r = c.run(sb, ["true"], notify=False)
            if r["status"] != "exited" or r["exit_code"] != 0:
                raise SystemExit("exec.run of true did not succeed: %s" % r)
            for _ in range(10):  # warm up
                c.run(sb, ["true"], notify=False)

            def one_serial(ctx):
                r = c.run(sb, ["true"], notify=False)
                assert r["exit_code"] == 0, r
            lat, wall = run_threads(1, max(50, args.calls // 4), one_serial)
            results.append(summary("serve, 1 client (latency of one exec.run)", lat, wall))

        class ServeCall:
            def setup(self, i):
                cl = WardClient(sock)
                return cl, cl.create_sandbox(ws)

            def __call__(self, ctx):
                cl, sbx = ctx
                r = cl.run(sbx, ["true"], notify=False)
                assert r["exit_code"] == 0, r
        lat, wall = run_threads(args.clients, args.calls, ServeCall())
        results.append(summary("serve, %d clients" % args.clients, lat, wall))

        def spawn(ctx):
            subprocess.run([ward, "run", "--", "true"], cwd=ws, env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lat, wall = run_threads(args.clients, args.calls, spawn)
        results.append(summary("spawn `ward run -- true`, %d workers" % args.clients, lat, wall))
        lat, wall = run_threads(1, max(50, args.calls // 4), spawn)
        results.append(summary("spawn `ward run -- true`, 1 at a time", lat, wall))
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=10)
        except subprocess.TimeoutExpired:
            daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)
        if state_dir:
            shutil.rmtree(state_dir, ignore_errors=True)

    meta = {"ward": v.get("version"), "cpus": os.cpu_count(), "kernel": os.uname().release,
            "state_fs": fs}
    if args.json:
        print(json.dumps({"meta": meta, "results": results}, indent=2))
        return 0
    print("ward %s, %s CPUs, kernel %s, daemon state on %s" % (meta["ward"], meta["cpus"],
                                                              meta["kernel"], meta["state_fs"]))
    print("| mode | calls | calls/s | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print("| %s | %d | %.1f | %.1f | %.1f |" % (r["mode"], r["calls"], r["calls_per_s"],
                                                   r["p50_ms"], r["p99_ms"]))
    serve4 = results[1]["calls_per_s"]
    spawn4 = results[2]["calls_per_s"]
    print("\nserve / spawn throughput at %d-way concurrency: %.2fx" % (args.clients,
                                                                       serve4 / spawn4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
