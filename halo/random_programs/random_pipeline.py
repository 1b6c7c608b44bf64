"""Random halo pipelines: seeded, deterministic, printable as a standalone script.

`random_pipeline(seed)` draws a DAG of 2-15 stages from the kinds real pipelines use
(the table in `random_stages`), with the inputs it reads: their shapes (small and awkward:
primes, 1, sizes no split factor divides) and value ranges that keep integer math in
range and gathers in bounds. `profile` (`size_profile`) sets the sizes: the fuzzer's
small ones by default, or the realistic ones a cost model trains at. The result is a
`pipeline_spec.RandomPipeline`, plain data:

    p = random_pipeline(7)
    print(p.source())
    built = p.build()
    inputs = {built.params[k]: v for k, v in p.make_inputs().items()}
    out = built.output.realize(p.output_shape, inputs=inputs, origin=p.output_origin)
"""
from __future__ import annotations

import random

from halo.random_programs.pipeline_spec import RandomPipeline
from halo.random_programs.random_stages import STAGE_KINDS, Drawing
from halo.random_programs.size_profile import FUZZ, SizeProfile

MIN_STAGES, MAX_STAGES = 2, 15
# Stored training samples name their pipeline by (seed, profile, GENERATOR_VERSION) and
# a hash of what it drew: raised when a change redraws pipelines the stored samples use
# (a sample whose pipeline draws differently anyway is skipped as stale by its hash).
GENERATOR_VERSION = 1
# Kinds that make poor outputs: an input behind a boundary condition is no computation,
# and updates that write a fixed region (histograms, scans, scatters) may write outside
# the output.
NOT_OUTPUTS = ("boundary_input", "histogram", "scan", "scatter")


def random_pipeline(seed: int, max_stages: int = MAX_STAGES,
                    profile: SizeProfile = FUZZ) -> RandomPipeline:
    """A random pipeline of 2..max_stages stages at the sizes of `profile`, the same for
    the same seed."""
    rng = random.Random(seed)
    d = Drawing(rng, channels=rng.choice(profile.channels), profile=profile)
    # Stage counts lean small (compile time grows with them) but reach max_stages.
    target = MIN_STAGES + int((max_stages - MIN_STAGES + 1) * rng.random() ** 2)
    kinds = [k for k, _ in STAGE_KINDS]
    weights = [w for _, w in STAGE_KINDS]
    attempts = 0
    while len(d.stages) < target or d.stages[-1].kind in NOT_OUTPUTS:
        attempts += 1
        kind = rng.choices(kinds, weights)[0]
        before = (len(d.stages), len(d.inputs), d.counter)
        if kind(d) is None:
            del d.stages[before[0]:]
            del d.inputs[before[1]:]
        if attempts > 200:
            break
    origin = (rng.randint(-5, 5), rng.randint(-5, 5)) if rng.random() < 0.3 else (0, 0)
    full = RandomPipeline(seed, tuple(d.inputs), tuple(d.stages), *d.image_shape(),
                          d.channels, *origin)
    return full.truncated(full.stages[-1].name)
