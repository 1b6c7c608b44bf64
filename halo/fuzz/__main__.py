"""`python -m halo.fuzz`: differential fuzzing of halo against its reference.

    python -m halo.fuzz --seconds 600 --seed 1 --jobs 2
    python -m halo.fuzz --pairs 10000 --seed 7 --jobs 16 --out fuzz_failures

Draws random (pipeline, schedule) pairs, compiles and runs each in a worker process, and
compares with `halo.reference`; a fraction of the schedules are illegal and must raise a
`HaloError`. Every failure is shrunk and written to --out as a standalone script. Exits
with status 1 if any failure was found.
"""
from __future__ import annotations

import argparse
import sys

from halo.fuzz.campaign import run_campaign


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
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None or args.pairs else 60.0
    summary = run_campaign(seed=args.seed, start=args.start, pairs=args.pairs, seconds=seconds,
                           jobs=args.jobs,
                           illegal_fraction=args.illegal, timeout_s=args.timeout,
                           out_dir=args.out, shrink_failures=not args.no_shrink,
                           progress=not args.no_progress)
    print(summary.report())
    return 1 if summary.bugs else 0


if __name__ == "__main__":
    sys.exit(main())
