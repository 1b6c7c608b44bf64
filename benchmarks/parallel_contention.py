"""Parallel loops next to other work: `python -m benchmarks.parallel_contention`.

Times a trivial parallel loop (a 1080x1920 uint8 add, `parallel(y)`) against the same
loop serial, each in a fresh process (libgomp reads its wait policy when it is loaded),
for each setting of libgomp's wait policy: halo's default (`GOMP_SPINCOUNT` =
`SPIN_COUNT`), libgomp's own default (spin 300,000 rounds), `OMP_WAIT_POLICY=PASSIVE`.
Each is measured idle and with a competing busy process pinned to one core (taskset;
`--cpus 0,1` runs the children on two cores, as on a small machine);
every number is the median of `--calls` calls, the best of `--runs` processes.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = {
    "halo default": {},
    "GOMP_SPINCOUNT=300000 (libgomp)": {"GOMP_SPINCOUNT": "300000"},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
}


def measure_in_this_process(calls: int) -> dict[str, float]:
    """Median milliseconds of one call, serial and parallel."""
    import numpy as np

    import halo
    y, x = halo.vars("y x")
    a = halo.ImageParam(halo.uint8, 2, "a")
    b = halo.ImageParam(halo.uint8, 2, "b")
    rng = np.random.default_rng(0)
    arrays = {"a": rng.integers(0, 100, (1080, 1920), dtype=np.uint8),
              "b": rng.integers(0, 100, (1080, 1920), dtype=np.uint8)}
    out = {}
    for schedule in ("serial", "parallel"):
        f = halo.Func("f")
        f[y, x] = a[y, x] + b[y, x]
        f.vectorize(x, 32)
        if schedule == "parallel":
            f.parallel(y)
        kernel = f.compile()
        for _ in range(20):  # warm up (and let the pool start)
            kernel((1080, 1920), **arrays)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            kernel((1080, 1920), **arrays)
            times.append(time.perf_counter() - start)
        out[schedule] = sorted(times)[len(times) // 2] * 1e3
    return out


def _child(env: dict[str, str], calls: int, cpus: str | None) -> dict[str, float]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    pin = ["taskset", "-c", cpus] if cpus else []
    result = subprocess.run(
        [*pin, sys.executable, "-m", "benchmarks.parallel_contention", "--child",
         "--calls", str(calls)], cwd=ROOT, env={**clean, **env}, check=True,
        capture_output=True, text=True, timeout=300)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cpus", help="run on these CPUs only (taskset -c list, e.g. "
                        "0,1); the busy process takes the first")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_in_this_process(args.calls)))
        return
    print(f"{'wait policy':26} {'load':>10} {'serial ms':>10} {'parallel ms':>12}")
    for load in ("idle", "one core busy"):
        busy = None
        if load != "idle":
            first = (args.cpus or "0").split(",")[0].split("-")[0]
            busy = subprocess.Popen(["taskset", "-c", first, sys.executable, "-c",
                                     "while True: pass"])
        try:
            for name, env in POLICIES.items():
                runs = [_child(env, args.calls, args.cpus) for _ in range(args.runs)]
                serial = min(r["serial"] for r in runs)
                parallel = min(r["parallel"] for r in runs)
                print(f"{name:26} {load:>10} {serial:10.3f} {parallel:12.3f}", flush=True)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()


if __name__ == "__main__":
    main()
