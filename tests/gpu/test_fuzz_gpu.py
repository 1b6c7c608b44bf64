"""A fixed-seed slice of `python -m halo.fuzz --target cuda` on the GPU: random pipelines
under random GPU schedules match `halo.reference`, random illegal GPU schedules raise a
HaloError before any launch (tests/fuzz/test_gpu_fuzz_slice.py compiles more of them to
PTX without a GPU)."""
import itertools

import pytest

from halo.fuzz.campaign import case_stream
from halo.fuzz.check import run_case

SEED = 20261126
PAIRS = 24
SLICES = 3


@pytest.mark.parametrize("part", range(SLICES))
def test_gpu_fuzz_slice(part):
    failures = []
    for case in itertools.islice(case_stream(SEED, target="cuda"), part, PAIRS, SLICES):
        outcome = run_case(case)
        if outcome.is_bug:
            failures.append(f"{outcome.kind}: {case}\n    {outcome.detail[:500]}")
    assert not failures, "\n".join(failures)
