"""Compile time of every app: `python -m benchmarks.compile_time [--apps a,b] [--threads N]
[--target host|cuda]`.

Each measurement runs in a fresh Python process (so no in-memory cache helps), with the
app's hand schedule (`gpu_schedule` for cuda), and times `lower` (schedule to flat loop
IR, or reading it from the on-disk cache, as `Pipeline.compile` does) and `backend`: for
the host, everything `Pipeline.compile` does after lowering (LLVM code generation,
optimization and JIT, or loading from the on-disk cache; the host checks);
for cuda, that (the kernels' CUDA C and the host code that launches them) and what the
first call adds: nvcc and ptxas (or the on-disk cache) and loading the module, the one a
call with device allocations runs (the aligned twin, where there is one). Imports and
CUDA's start (its context) are not counted.
  * cold: an empty on-disk cache (`HALO_CACHE_DIR` a new temporary directory);
  * warm: a second process with the cache the cold one filled.
Each is the best of `--runs` processes (the machine may be busy). `benchmarks.run` adds
these numbers to its report.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ["blur", "matmul", "conv_relu", "unsharp", "harris", "softmax", "histogram"]


def measure_in_this_process(app: str, threads: int,
                            target: str = "host") -> dict[str, float | int]:
    """Lower and compile `app` with its hand schedule; seconds per phase, cache counts."""
    import halo
    from halo import driver
    from halo.backends.llvm import object_cache
    from halo.ir.deep_stack import run_deep
    from halo.lang.environment import Environment
    from halo.runtime import Kernel
    module = importlib.import_module(f"apps.{app}")
    *_, output, funcs = module.algorithm()
    if target == "cuda":
        from halo.backends.cuda.device import cuda_driver
        cuda_driver()  # CUDA's start, not counted
        module.gpu_schedule(funcs)
        chosen = halo.Target("cuda")
    else:
        module.schedule(funcs)
        chosen = halo.Target("host", threads=threads)
    start = time.perf_counter()
    lowered = run_deep("lowering", driver.lowered, Environment.of([output]), chosen)
    lowered_at = time.perf_counter()
    function = Kernel(lowered, chosen).function
    if target == "cuda":  # the first call compiles and loads the module it runs
        function._load(function.aligned_source is not None)
    done = time.perf_counter()
    return {"lower_s": lowered_at - start, "backend_s": done - lowered_at,
            "total_s": done - start, "disk_hits": object_cache.stats["hits"]}


def measure_app(app: str, threads: int, runs: int = 2,
                target: str = "host") -> dict[str, dict]:
    """{"cold": ..., "warm": ...}, each the best of `runs` fresh processes."""
    cold, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="halo-compile-time-") as cache:
            cold.append(_child(app, threads, cache, target))
            warm.append(_child(app, threads, cache, target))
    best = min  # of total time
    return {"cold": best(cold, key=lambda r: r["total_s"]),
            "warm": best(warm, key=lambda r: r["total_s"])}


def compile_times(apps: list[str], threads: int, runs: int = 2,
                  target: str = "host") -> dict[str, dict]:
    return {app: measure_app(app, threads, runs, target) for app in apps}


def markdown(times: dict[str, dict]) -> str:
    """The table of `compile_times`, milliseconds."""
    lines = ["| app | cold: lower | backend | total | warm (on-disk cache): lower | backend "
             "| total |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for app, t in times.items():
        cells = [f"{t[run][phase] * 1e3:.0f}" for run in ("cold", "warm")
                 for phase in ("lower_s", "backend_s", "total_s")]
        lines.append(f"| {app} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _child(app: str, threads: int, cache: str, target: str) -> dict:
    env = {**os.environ, "HALO_CACHE_DIR": cache,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "benchmarks.compile_time", "--child", app,
                           "--threads", str(threads), "--target", target], env=env, cwd=ROOT,
                          text=True, capture_output=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compile_time",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=2, help="processes per measurement")
    parser.add_argument("--target", choices=["host", "cuda"], default="host")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure_in_this_process(args.child, args.threads, args.target)))
        return 0
    apps = [a.strip() for a in args.apps.split(",") if a.strip()]
    unknown = sorted(set(apps) - set(APPS))
    if unknown:
        parser.error(f"unknown app(s) {', '.join(unknown)}; choose from {', '.join(APPS)}")
    print(markdown(compile_times(apps, args.threads, args.runs, args.target)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
