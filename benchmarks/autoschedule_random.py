"""The autoscheduler on random pipelines, against the reference: an opt-in campaign,
`python -m benchmarks.autoschedule_random --seeds 1000:1200 [--jobs 2] [--budget 5]
[--profile realistic]`.

For each seed, `halo.random_programs.random_pipeline(seed)` at its sizes (the fuzzer's
small awkward ones, or with `--profile realistic` the training set's, sides 64-2048) is
autoscheduled (its inputs passed, so the search plans for them and validates its
candidates on them), then realized and compared with `halo.reference`. Prints one line
per failure (the seed, the schedule, what differed) and a summary; exits with status 1
if any pipeline failed. (The suite runs two seeds of this in
tests/autoschedule/test_autoschedule.py.)
"""
from __future__ import annotations

import argparse
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import halo
from halo.random_programs.random_pipeline import random_pipeline
from halo.random_programs.size_profile import FUZZ, REALISTIC

PROFILES = {"fuzz": FUZZ, "realistic": REALISTIC}


def check(seed: int, budget_s: float, max_stages: int, profile: str) -> str | None:
    """None if the autoscheduled pipeline of `seed` matches the reference, else why not."""
    source = "(no schedule)"
    try:
        p = random_pipeline(seed, max_stages=max_stages, profile=PROFILES[profile])
        built = p.build()
        arrays = p.make_inputs(specials=False)
        inputs = {built.params[k]: v for k, v in arrays.items()}
        box = [(o, s) for o, s in zip(p.output_origin, p.output_shape, strict=True)]
        result = halo.autoschedule(built.output, estimates={built.output: box},
                                   inputs=inputs, budget_s=budget_s)
        source = result.source
        got = built.output.realize(p.output_shape, inputs=inputs, origin=p.output_origin)
        want = halo.reference(built.output, p.output_shape, inputs=inputs,
                              origin=p.output_origin)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    except Exception:  # noqa: BLE001 - every failure is reported with its seed
        return f"seed {seed}:\n{source}\n{traceback.format_exc()}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1000:1200", help="first:end (end excluded)")
    parser.add_argument("--jobs", type=int, default=2, help="pipelines at a time")
    parser.add_argument("--budget", type=float, default=5.0, help="autoschedule budget_s")
    parser.add_argument("--max-stages", type=int, default=6)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="fuzz")
    args = parser.parse_args()
    first, end = (int(x) for x in args.seeds.split(":"))
    seeds = range(first, end)
    failures = 0
    with ProcessPoolExecutor(args.jobs) as pool:
        for problem in pool.map(check, seeds, [args.budget] * len(seeds),
                                [args.max_stages] * len(seeds), [args.profile] * len(seeds)):
            if problem is not None:
                failures += 1
                print(problem, flush=True)
    print(f"{len(seeds)} random pipelines autoscheduled, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
