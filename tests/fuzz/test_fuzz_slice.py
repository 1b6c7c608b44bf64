"""A fixed-seed slice of the differential fuzzer (`python -m halo.fuzz`): random
pipelines under random legal schedules must match `halo.reference`, and random illegal
schedules must raise a HaloError. A failure names the case; reproduce and shrink it with
`python -m halo.fuzz`, or write it out with `halo.fuzz.script.case_script`.

Compiling and running a pair is what costs; drawing one costs little. So the slice draws
the campaign's first `CANDIDATES` pairs and runs those that add breadth, in campaign
order: a pair is run when it brings a feature (a stage kind, a schedule call, an illegal
rule, an input dtype, a dimensionality, legal or not) that fewer than two pairs run so far
have, or a (stage kind, schedule call) combination none has. About a third of the
candidates cover every feature and combination that all of them do."""
from __future__ import annotations

import functools
import itertools
from collections import Counter

import pytest

from halo.errors import HaloError
from halo.fuzz.campaign import case_stream
from halo.fuzz.check import Case, NotApplicable, case_program, run_case

SEED = 20261124
CANDIDATES = 300
SLICES = 8


@functools.cache
def _features(case: Case) -> frozenset[tuple]:
    """What a pair exercises: single features, and (stage kind, call) combinations."""
    try:
        pipeline, calls, rule = case_program(case)
    except (HaloError, NotApplicable) as e:  # run_case reports it
        return frozenset({("drawing", type(e).__name__)})
    kinds = {s.kind for s in pipeline.stages}
    methods = {c.method for c in calls}
    single = {("kind", k) for k in kinds} | {("call", m) for m in methods}
    single |= {("dtype", i.dtype) for i in pipeline.inputs}
    single |= {("ndim", s.ndim) for s in pipeline.stages} | {("legal", case.legal)}
    if rule:
        single.add(("rule", rule))
    return frozenset(single | {("combination", k, m) for k in kinds for m in methods})


@functools.cache
def covering_cases() -> tuple[Case, ...]:
    """The candidates that add breadth (see the module docstring), in campaign order."""
    seen: Counter = Counter()
    chosen = []
    for case in itertools.islice(case_stream(SEED), CANDIDATES):
        features = _features(case)
        if any(seen[f] < (1 if f[0] == "combination" else 2) for f in features):
            chosen.append(case)
            seen.update(features)
    return tuple(chosen)


def test_the_chosen_pairs_cover_what_all_candidates_do():
    """Every feature and combination of the candidates is run, and the choice is a
    real subset (each slice below runs fewer than all candidates)."""
    candidates = list(itertools.islice(case_stream(SEED), CANDIDATES))
    everything = set().union(*map(_features, candidates))
    covered = set().union(*map(_features, covering_cases()))
    assert covered == everything
    # (a feature unique to every pair, such as a seed, would make the choice all of them)
    assert len(covering_cases()) < CANDIDATES // 2, len(covering_cases())


@pytest.mark.parametrize("part", range(SLICES))
def test_fuzz_slice(part):
    """Every SLICES-th of the chosen pairs, from the part-th."""
    failures = []
    for case in covering_cases()[part::SLICES]:
        outcome = run_case(case)
        if outcome.is_bug:
            failures.append(f"{outcome.kind}: {case}\n    {outcome.detail[:500]}")
    assert not failures, "\n".join(failures)
