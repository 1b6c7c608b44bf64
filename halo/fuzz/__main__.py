"""`python -m halo.fuzz`: differential fuzzing of halo against its reference.

    python -m halo.fuzz --seconds 600 --seed 1 --jobs 2
    python -m halo.fuzz --pairs 10000 --seed 7 --jobs 16 --out fuzz_failures
    python -m halo.fuzz --target cuda --pairs 3000 --jobs 8      # GPU schedules, on the GPU
    python -m halo.fuzz --target cuda --compile-only --pairs 50  # no GPU: nvcc -ptx only

Draws random (pipeline, schedule) pairs, compiles and runs each in a worker process, and
compares with `halo.reference`; a fraction of the schedules are illegal and must raise a
`HaloError`. With `--target cuda` the schedules are GPU schedules, run on the GPU (a CUDA
error or a hang costs its worker process, which is replaced); `--compile-only` compiles
their CUDA C to PTX with nvcc instead, on a machine without a GPU.

Every failure is shrunk and written to --out as a standalone script. Exits
with status 1 if any failure was found.
"""
from __future__ import annotations

import argparse
import sys

from halo.errors import HaloError
from halo.fuzz.campaign import run_campaign
from halo.target import cuda_device_arch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m halo.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=None,
                        help="stop drawing new pairs after this long (default: 60 unless "
                             "--pairs is given)")
    parser.add_argument("--pairs", type=int, default=None, help="how many pairs to try")
    parser.add_argument("--seed", type=int, default=0, help="the campaign's seed")
    parser.add_argument("--start", type=int, default=0,
                        help="skip the campaign's first pairs (to split one campaign "
                             "across runs)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--illegal", type=float, default=0.2,
                        help="fraction of schedules that are illegal (default 0.2)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds before a pair counts as a hang")
    parser.add_argument("--out", default="fuzz_failures",
                        help="folder for the scripts of failing cases")
    parser.add_argument("--no-shrink", action="store_true", help="write failures unshrunk")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--target", choices=("host", "cuda"), default="host",
                        help="where the pairs run: the CPU (default) or an NVIDIA GPU, "
                             "with GPU schedules")
    parser.add_argument("--compile-only", action="store_true",
                        help="--target cuda: compile the CUDA C to PTX with nvcc, run "
                             "nothing (no GPU needed)")
    args = parser.parse_args(argv)
    if args.compile_only and args.target != "cuda":
        parser.error("--compile-only goes with --target cuda")
    problem = _cuda_problem() if args.target == "cuda" and not args.compile_only else None
    if problem:
        print(f"--target cuda runs on a GPU: {problem}; --compile-only checks the CUDA C "
              "without one", file=sys.stderr)
        return 2
    seconds = args.seconds if args.seconds is not None or args.pairs else 60.0
    summary = run_campaign(seed=args.seed, start=args.start, pairs=args.pairs, seconds=seconds,
                           jobs=args.jobs,
                           illegal_fraction=args.illegal, timeout_s=args.timeout,
                           out_dir=args.out, shrink_failures=not args.no_shrink,
                           progress=not args.no_progress, target=args.target,
                           compile_only=args.compile_only)
    print(summary.report())
    return 1 if summary.bugs else 0


def _cuda_problem() -> str:
    """'' where this process can open a CUDA device, else why not."""
    try:
        cuda_device_arch()
    except HaloError as e:
        return str(e)
    return ""


if __name__ == "__main__":
    sys.exit(main())
