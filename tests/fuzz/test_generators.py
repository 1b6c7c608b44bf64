"""The random pipeline and schedule generators, the shrinker and the script writer."""
from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

import halo
from halo.fuzz.check import (
    ACCEPTED,
    MISMATCH,
    OK,
    REJECTED,
    Case,
    Outcome,
    case_program,
    run_case,
)
from halo.fuzz.script import case_script
from halo.fuzz.shrink import shrink
from halo.random_programs.illegal_schedule import ILLEGAL_CALLS, illegal_schedule
from halo.random_programs.random_pipeline import MAX_STAGES, MIN_STAGES, random_pipeline
from halo.random_programs.random_schedule import LOOP_PRIMITIVES, apply_schedule, random_schedule
from halo.random_programs.random_stages import STAGE_KINDS
from halo.schedule.calls import Call, calls_source


def test_pipelines_are_deterministic_and_schedules_replay():
    """The same seed gives the same algorithm and schedule; replaying the calls on a
    fresh build gives the same schedule source."""
    for seed in range(20):
        p, q = random_pipeline(seed), random_pipeline(seed)
        assert p.source() == q.source()
        calls = random_schedule(p, p.build(), seed)
        assert calls_source(calls) == calls_source(random_schedule(q, q.build(), seed))
        built = p.build()
        apply_schedule(calls, built)
        assert halo.schedule_source(built.output) == halo.schedule_source(
            _scheduled(p, calls).output)


def test_random_schedules_round_trip_through_json():
    """Drawn calls survive the JSON form a tuner's database stores."""
    for seed in range(10):
        p = random_pipeline(seed)
        calls = random_schedule(p, p.build(), seed)
        text = json.dumps([c.to_json() for c in calls])
        assert [Call.from_json(d) for d in json.loads(text)] == calls


def _scheduled(p, calls):
    built = p.build()
    apply_schedule(calls, built)
    return built


def test_pipelines_cover_every_stage_kind_and_size():
    """Over a few hundred seeds every stage kind appears, and sizes span 2..15 stages."""
    kinds, sizes = Counter(), Counter()
    for seed in range(600):
        p = random_pipeline(seed)
        kinds.update(s.kind for s in p.stages)
        sizes[len(p.stages)] += 1
    assert {f.__name__.removesuffix("_stage") for f, _ in STAGE_KINDS} <= set(kinds)
    assert min(sizes) == MIN_STAGES and max(sizes) >= MAX_STAGES - 2


def test_reference_of_random_pipelines_is_finite_and_in_range():
    """Inputs and value ranges keep results finite and inside the tracked interval."""
    for seed in range(40):
        p = random_pipeline(seed)
        built = p.build()
        out = halo.reference(built.output, p.output_shape,
                             inputs=p.make_inputs(specials=False), origin=p.output_origin)
        v = p.output.value
        assert np.all(np.isfinite(out.astype(np.float64)))
        assert out.min() >= v.lo - 4 * v.err - 1e-3 and out.max() <= v.hi + 4 * v.err + 1e-3


def test_clamp_limits_are_float32_values():
    """The generator's bounds and exactness reason about a clamp's limits as written; a
    limit float32 can't hold is another value when run (seed 20261882001347 clamped a
    sum's float terms to +-1e6 / 9, which float32 holds only to 2**-6: the sum of nine
    was called exact, and a legal order of its additions was reported as a mismatch)."""
    literals = re.compile(r"halo\.clamp\(.*?, (-?[\d.e+]+), (-?[\d.e+]+)\)")
    for seed in [20261882001347, *range(300)]:
        for lo, hi in literals.findall(random_pipeline(seed).source()):
            for limit in (float(lo), float(hi)):
                assert float(np.float32(limit)) == limit, (seed, lo, hi)


def test_schedules_use_every_primitive():
    used, rules = Counter(), Counter()
    for seed in range(150):
        p = random_pipeline(seed)
        used.update(c.method for c in random_schedule(p, p.build(), seed))
        rules[illegal_schedule(p, p.build(), seed)[1]] += 1
    assert set(LOOP_PRIMITIVES) - {"parallel_rvar"} <= set(used)
    assert {"compute_at", "compute_root", "store_at", "bound"} <= set(used)
    assert len(rules) >= len(ILLEGAL_CALLS) - 6


NEW_FUNC_CALLS = {"cache_read", "cache_write", "rfactor"}


def test_schedules_use_caches_rfactor_atomic_and_specializations():
    """The primitives that make new Funcs or permissions appear, and a reduction loop
    of an atomic update runs in parallel or vectorized somewhere."""
    used, specialized, rvar_loops = Counter(), 0, 0
    for seed in range(150):
        p = random_pipeline(seed)
        built = p.build()
        calls = random_schedule(p, built, seed)
        used.update(c.method for c in calls)
        specialized += sum(c.target.condition is not None for c in calls)
        atomic = {c.target for c in calls if c.method == "atomic"}
        rvar_loops += sum(c.target in atomic and c.method in ("parallel", "vectorize")
                          for c in calls)
    assert NEW_FUNC_CALLS | {"atomic"} <= set(used)
    assert specialized > 0 and rvar_loops > 0


def test_schedules_place_inline_reductions_and_what_they_read():
    """Named inline reductions are placed at root and at their user's loops (or left
    where lowering puts them), and a Func a reduction reads is computed at a loop of the
    reduction's user, which lowering's default placement of the reduction allows."""
    placements, producers_at_users = Counter(), 0
    for seed in range(80):
        p = random_pipeline(seed)
        built = p.build()
        calls = random_schedule(p, built, seed)
        named = {r: s.name for s in p.stages for r in s.reductions}
        placements.update(c.method for c in calls
                          if c.target.func in named and c.method.startswith("compute"))
        read_by_reduction = {s.name: [q for q in s.reads if q in built.funcs]
                             for s in p.stages if "halo.sum" in "".join(s.lines)
                             or "halo.maximum" in "".join(s.lines)}
        producers_at_users += sum(c.method == "compute_at" and c.args[0].func == user
                                  for user, reads in read_by_reduction.items()
                                  for c in calls if c.target.func in reads)
    assert {"compute_root", "compute_at"} <= set(placements)
    assert producers_at_users > 0


def test_script_of_a_case_with_new_funcs_and_specializations_runs():
    """A script replays cache_read / cache_write / rfactor (whose results it names) and
    specializations over input extents, and passes."""
    for seed in range(200):
        case = Case(seed, seed * 7 + 1)
        _, calls, _ = case_program(case)
        if {c.method for c in calls} & NEW_FUNC_CALLS and \
                any(c.target.condition is not None for c in calls):
            break
    assert run_case(case).kind == OK
    text = case_script(case, Outcome(OK), "example")
    assert ".specialize(" in text
    assert any(f"    {c.result} = {c.target.source()}.{c.method}(" in text
               for c in calls if c.result)
    namespace: dict = {}
    exec(compile(text, "script.py", "exec"), namespace)
    namespace["test_example"]()


@pytest.mark.parametrize("legal", [True, False])
def test_script_of_a_case_runs(legal, tmp_path):
    """The standalone script of a case defines a test that passes when halo is right."""
    case = Case(3, 3, legal)
    assert run_case(case).kind == OK
    text = case_script(case, Outcome(OK), "example")
    namespace: dict = {}
    exec(compile(text, "script.py", "exec"), namespace)
    namespace["test_example"]()


def test_shrink_keeps_the_failure_and_drops_the_rest():
    """With a stand-in check that 'fails' whenever a split remains, shrinking ends at the
    smallest pipeline with one split (and the call making the Func it splits, if any)."""
    def run_many(cases):
        out = []
        for c in cases:
            _, calls, _ = case_program(c)
            out.append(Outcome(MISMATCH if any(k.method == "split" for k in calls) else OK))
        return out
    case = next(Case(s, s) for s in range(100)
                if sum(c.method == "split" for c in case_program(Case(s, s))[1]) >= 2
                and len(random_pipeline(s).stages) >= 4)
    small, outcome = shrink(case, Outcome(MISMATCH), run_many)
    pipeline, calls, _ = case_program(small)
    assert outcome.kind == MISMATCH
    # (a split of a Func made by cache_write / rfactor keeps the call that makes it)
    assert calls[-1].method == "split" and all(c.result for c in calls[:-1])
    assert len(pipeline.stages) < len(random_pipeline(case.program_seed).stages)


def test_shrinking_an_illegal_case_keeps_its_illegal_call():
    """A shrunk illegal case that lost the call breaking the rule (its Func is no longer in
    the truncated pipeline) doesn't apply: were it run, its last legal call would look
    'accepted'."""
    def illegal_call_off_the_first_stage(s):
        pipeline = random_pipeline(s)
        calls = case_program(Case(s, s, legal=False))[1]
        return calls[-1].target.func != pipeline.stages[0].name and len(pipeline.stages) >= 3
    seed = next(s for s in range(100) if illegal_call_off_the_first_stage(s))
    first = random_pipeline(seed).stages[0].name
    shrunk = Case(seed, seed, legal=False, output=first)
    assert run_case(shrunk).kind == REJECTED
    drawn = case_program(Case(seed, seed, legal=False))[1]
    dropped_last = Case(seed, seed, legal=False, keep=tuple(range(len(drawn) - 1)))
    assert run_case(dropped_last).kind == REJECTED
    assert run_case(Case(seed, seed, legal=False)).kind == OK


def test_an_accepted_illegal_case_is_not_shrunk():
    """A shrink could drop the call that made the last one illegal (python -m halo.fuzz
    --target cuda, seed 20261801: the thread binding around a vthread), and the smaller
    case, legal now, would be 'accepted' too."""
    tried = []

    def run_many(cases):
        tried.extend(cases)
        return [Outcome(ACCEPTED) for _ in cases]
    case = Case(5, 5, legal=False)
    assert shrink(case, Outcome(ACCEPTED), run_many) == (case, Outcome(ACCEPTED))
    assert not tried


def test_shrinking_a_case_whose_schedule_cannot_be_drawn_returns_it(monkeypatch):
    """A legal schedule refused while it is drawn has no calls to drop: the shrinker
    keeps the case (and the smallest stage that still fails) instead of raising."""
    import halo.fuzz.shrink as shrink_module

    def refuse(case):
        raise halo.ScheduleError("s1.fuse(a, b): refused while drawing")
    monkeypatch.setattr(shrink_module, "case_program", refuse)
    refused = Outcome(REJECTED, "drawing: ScheduleError: s1.fuse(a, b): refused")
    case = Case(3, 3)
    small, outcome = shrink(case, refused, lambda cases: [refused for _ in cases])
    assert outcome == refused and small.program_seed == 3 and small.output is not None


def test_cache_reads_are_computed_around_their_readers_too():
    """A copy for one reader is computed at one of the reader's loops or at a loop of a
    Func around where the reader is computed (a packed panel, as apps/matmul.py's B)."""
    own = around = 0
    for seed in range(400):
        p = random_pipeline(seed)
        calls = random_schedule(p, p.build(), seed)
        readers = {c.result: dict(c.kwargs)["readers"][0].func for c in calls
                   if c.method == "cache_read" and c.kwargs}
        for c in calls:
            if c.method == "compute_at" and c.target.func in readers:
                if c.args[0].func == readers[c.target.func]:
                    own += 1
                else:
                    around += 1
    assert own > 0 and around > 0, (own, around)
