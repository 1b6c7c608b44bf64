"""A fixed-seed slice of the differential fuzzer (`python -m halo.fuzz`): random
pipelines under random legal schedules must match `halo.reference`, and random illegal
schedules must raise a HaloError. A failure names the case; reproduce and shrink it with
`python -m halo.fuzz`, or write it out with `halo.fuzz.script.case_script`."""
from __future__ import annotations

import itertools

import pytest

from halo.fuzz.campaign import case_stream
from halo.fuzz.check import run_case

SEED = 20261124
SLICES, PAIRS_PER_SLICE = 15, 20


@pytest.mark.parametrize("part", range(SLICES))
def test_fuzz_slice(part):
    """Pairs part*20 .. part*20+19 of the campaign with seed SEED."""
    cases = itertools.islice(case_stream(SEED, start=part * PAIRS_PER_SLICE), PAIRS_PER_SLICE)
    failures = []
    for case in cases:
        outcome = run_case(case)
        if outcome.is_bug:
            failures.append(f"{outcome.kind}: {case}\n    {outcome.detail[:500]}")
    assert not failures, "\n".join(failures)
