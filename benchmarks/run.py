"""Run the benchmark suite: `python -m benchmarks.run [--apps a,b] [--repeats N] [--threads N]`.

For every case of `benchmarks/cases.py` (all apps, or those named by `--apps`), in this
one process, with the same inputs and thread count: halo with the app's hand schedule,
halo autoscheduled (`halo.autoschedule`), NumPy, and, when the `halide` package imports,
Halide with the same schedule and Halide autoscheduled by each of Adams2019,
Mullapudi2016 and Li2018. Outputs are checked against each other, then timed. Then
each app's compile time (`benchmarks/compile_time.py`: lowering, LLVM and JIT in fresh
processes, cold and with the on-disk cache warm).
Writes `results.json`, `results.md`, `speedup.png` and `details/` under
`benchmarks/results/` (or `--out`), prints the table, and exits with status 1 if any
variant failed or disagreed.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from benchmarks.cases import APPS, CASES
from benchmarks.compile_time import compile_times
from benchmarks.measure import HALIDE, HALIDE_AUTO, NUMPY, VARIANTS, measure
from benchmarks.report import markdown, write_all

RESULTS = Path(__file__).parent / "results"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", default=",".join(APPS),
                        help=f"comma-separated apps to run (default: all of {','.join(APPS)})")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed runs per variant, after the warm-up (default 5)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads for every variant (default: the core count)")
    parser.add_argument("--no-halide", action="store_true",
                        help="skip the Halide variants even if halide is installed")
    parser.add_argument("--tune-budget", type=float, default=0.0,
                        help="seconds of measured tuning per app for 'halo auto+tune' "
                             "(default 0: not run)")
    parser.add_argument("--skip", default="",
                        help="comma-separated variants not to run (of "
                             f"{','.join(VARIANTS)}; NumPy always runs)")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help=f"where to write the results (default {RESULTS})")
    args = parser.parse_args(argv)
    args.apps = [a.strip() for a in args.apps.split(",") if a.strip()]
    unknown = sorted(set(args.apps) - set(APPS))
    if unknown:
        parser.error(f"unknown app(s) {', '.join(unknown)}; choose from {', '.join(APPS)}")
    args.skip = [v.strip() for v in args.skip.split(",") if v.strip()]
    unknown = sorted(set(args.skip) - set(VARIANTS) | set(args.skip) & {NUMPY})
    if unknown:
        parser.error(f"can't skip {', '.join(unknown)}; choose from "
                     f"{', '.join(v for v in VARIANTS if v != NUMPY)}")
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Halide's runtime sizes its thread pool from HL_NUM_THREADS when it first runs a
    # parallel loop, so this must happen before any Halide code runs.
    os.environ["HL_NUM_THREADS"] = str(args.threads)
    twins, halide_note, skip = _import_halide_twins(args.no_halide)
    skip.update({variant: "--skip" for variant in args.skip})
    meta = _meta(args, twins)
    print(f"halo benchmarks: {meta['cpu']}, {args.threads} thread(s), "
          f"{args.repeats} repeats; {halide_note}", flush=True)
    results = []
    for case in (c for c in CASES if c.app in args.apps):
        start = time.perf_counter()
        print(f"- {case.label} ...", end=" ", flush=True)
        with _blas_threads(args.threads):
            result = measure(case, args.threads, args.repeats, twins, skip,
                             args.tune_budget)
        results.append(result)
        times = ", ".join(f"{name} {result.median_ms(name):.1f} ms"
                          for name in result.variants if result.median_ms(name) is not None)
        print(f"{times} ({time.perf_counter() - start:.0f} s)", flush=True)
        for mismatch in result.mismatches:
            print(f"  MISMATCH {mismatch}", flush=True)
    print("- compile time (fresh processes, cold and warm on-disk cache) ...", flush=True)
    meta["compile_time"] = compile_times(args.apps, args.threads)
    write_all(results, meta, args.out)
    print()
    print(markdown(results, meta))
    print(f"Wrote {args.out}/results.json, results.md, speedup.png and details/.")
    failed = any(r.mismatches or any(v.error for v in r.variants.values()) for r in results)
    return 1 if failed else 0


def _import_halide_twins(disabled: bool):
    """The twins module (or None), a line saying which Halide variants will run, and the
    variants to skip, with the reason."""
    halide_variants = [HALIDE, *HALIDE_AUTO.values()]
    if disabled:
        reason = "--no-halide"
        return None, f"Halide skipped ({reason})", dict.fromkeys(halide_variants, reason)
    try:
        from benchmarks import halide_twins
    except ImportError as error:
        reason = f"{error}; `pip install .[bench]` installs it"
        return None, f"Halide skipped ({reason})", dict.fromkeys(halide_variants, reason)
    version = _version("halide")
    skip, loaded = {}, []
    for name, variant in HALIDE_AUTO.items():
        try:
            halide_twins.load_autoscheduler(name)
        except (FileNotFoundError, RuntimeError) as error:
            skip[variant] = f"the {name} plugin won't load: {error}"
            continue
        loaded.append(name)
    autoschedulers = f" and its {', '.join(loaded)}" if loaded else ""
    return halide_twins, f"Halide {version}{autoschedulers}", skip


def _blas_threads(threads: int):
    """Limit NumPy's BLAS (matmul, conv_relu's im2col product) to the same thread count."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("warning: threadpoolctl is not installed; NumPy's BLAS uses its own thread "
              "count", file=sys.stderr)
        return nullcontext()
    return threadpool_limits(limits=threads)


def _meta(args: argparse.Namespace, twins) -> dict:
    versions = {name: _version(name) for name in ("halo", "numpy", "llvmlite", "halide")}
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "revision": _git_revision(),
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "threads": args.threads,
        "repeats": args.repeats,
        "python": platform.python_version(),
        "versions": {k: v for k, v in versions.items() if v},
    }
    if twins is not None:
        meta["halide_target"] = str(twins.jit_target())
    return meta


def _git_revision() -> str | None:
    """The commit the measured halo comes from, "-dirty" if the tree has changes."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, cwd=Path(__file__).parent, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    sys.exit(main())
