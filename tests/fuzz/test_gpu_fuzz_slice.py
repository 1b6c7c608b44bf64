"""A fixed-seed slice of `python -m halo.fuzz --target cuda --compile-only`: random
pipelines under random GPU schedules must give CUDA C that nvcc compiles to PTX (no GPU
needed; skipped without nvcc), and random illegal GPU schedules must raise a HaloError
before any launch. tests/gpu/test_fuzz_gpu.py runs such pairs on a GPU against
`halo.reference`.

As in test_fuzz_slice.py, the slice runs the candidates that add breadth: a pair brings a
stage kind, a schedule call, an illegal rule or a memory scope that fewer than two pairs
run so far have."""
from __future__ import annotations

import functools
import itertools
import shutil
from collections import Counter

import pytest

import halo
from halo.errors import HaloError
from halo.fuzz.campaign import case_stream
from halo.fuzz.check import (
    GPU_LIMITS,
    OK,
    UNFIT,
    Case,
    NotApplicable,
    Outcome,
    case_program,
    run_case,
)
from halo.fuzz.script import case_script
from halo.random_programs.illegal_gpu_schedule import ILLEGAL_GPU_CALLS, illegal_gpu_schedule
from halo.random_programs.random_gpu_schedule import random_gpu_schedule
from halo.random_programs.random_pipeline import random_pipeline
from halo.random_programs.random_schedule import apply_schedule
from halo.schedule.calls import calls_source

SEED = 20261126
CANDIDATES = 120
SLICES = 4
NVCC = shutil.which("nvcc")


def _stream(seed: int = SEED):
    return case_stream(seed, target="cuda", compile_only=True)


@functools.cache
def _features(case: Case) -> frozenset[tuple]:
    try:
        pipeline, calls, rule = case_program(case)
    except (HaloError, NotApplicable) as e:
        return frozenset({("drawing", type(e).__name__)})
    out = {("kind", s.kind) for s in pipeline.stages} | {("call", c.method) for c in calls}
    out |= {("scope", c.args[0]) for c in calls if c.method in ("store_in", "cache_read",
                                                               "cache_write")}
    out |= {("legal", case.legal)} | ({("rule", rule)} if rule else set())
    return frozenset(out)


@functools.cache
def covering_cases() -> tuple[Case, ...]:
    seen: Counter = Counter()
    chosen = []
    for case in itertools.islice(_stream(), CANDIDATES):
        features = _features(case)
        if any(seen[f] < 2 for f in features):
            chosen.append(case)
            seen.update(features)
    return tuple(chosen)


def test_gpu_schedules_draw_every_gpu_verb():
    """The candidates bind blocks, threads and vthreads, tile, make updates atomic and
    rfactor them, cache into shared memory and registers, double-buffer, unroll and
    vectorize inside threads; and the slice is a real subset of them."""
    features = set().union(*map(_features, itertools.islice(_stream(), CANDIDATES)))
    calls = {f[1] for f in features if f[0] == "call"}
    assert {"gpu_tile", "gpu_blocks", "gpu_threads", "vthread", "atomic", "rfactor",
            "cache_read", "cache_write", "compute_at", "unroll", "vectorize",
            "store_in", "double_buffer"} <= calls
    assert {("scope", s) for s in ("shared", "local", "global")} <= features
    assert len(covering_cases()) < CANDIDATES // 2


def test_gpu_schedules_are_deterministic_and_replay():
    for seed in range(6):
        p, q = random_pipeline(seed), random_pipeline(seed)
        calls = random_gpu_schedule(p, p.build(), seed)
        assert calls_source(calls) == calls_source(random_gpu_schedule(q, q.build(), seed))
        built, again = p.build(), q.build()
        apply_schedule(calls, built)
        apply_schedule(calls, again)
        assert halo.schedule_source(built.output) == halo.schedule_source(again.output)


def test_every_illegal_gpu_rule_is_drawn_and_refused():
    """Each rule of ILLEGAL_GPU_CALLS is drawn within a few hundred seeds, and its first
    case raises a HaloError (when called or when lowered: no nvcc, no GPU needed)."""
    first: dict[str, int] = {}
    for seed in range(400):
        _, rule = illegal_gpu_schedule(random_pipeline(seed), random_pipeline(seed).build(),
                                       seed)
        first.setdefault(rule, seed)
        if len(first) == len(ILLEGAL_GPU_CALLS):
            break
    assert set(first) == set(ILLEGAL_GPU_CALLS)
    for rule, seed in sorted(first.items()):
        outcome = run_case(Case(seed, seed, legal=False, target="cuda", compile_only=True))
        assert outcome.kind == OK and outcome.rule == rule, (rule, seed, outcome)


@functools.cache
def _outcome(case: Case) -> Outcome:
    return run_case(case)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("part", range(SLICES))
def test_gpu_fuzz_slice_compiles_to_ptx(part):
    failures = []
    for case in covering_cases()[part::SLICES]:
        outcome = _outcome(case)
        if outcome.is_bug:
            failures.append(f"{outcome.kind}: {case}\n    {outcome.detail[:500]}")
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_unfit_is_a_gpu_resource_limit_and_no_bug():
    """Some legal GPU cases are refused for a resource limit the draw can't foresee (a
    shared buffer without a constant size, ...): they count as unfit, not as bugs."""
    outcome = next(o for c in itertools.islice(_stream(3), 10) if c.legal
                   and (o := run_case(c)).kind == UNFIT)  # (campaign 3 has them early)
    assert not outcome.is_bug and any(limit in outcome.detail for limit in GPU_LIMITS)


def test_a_gpu_case_script_names_its_target():
    case = next(c for c in itertools.islice(_stream(), 10) if c.legal)
    text = case_script(case, Outcome(OK))
    assert 'halo.Target("cuda", arch="sm_90")' in text and "ptx_problem" in text
    running = case_script(Case(case.program_seed, case.schedule_seed, target="cuda"),
                          Outcome(OK))
    assert "target='cuda')" in running.split("got = ")[1].splitlines()[0]
    assert "target" not in running.split("want = ")[1].splitlines()[0]


def test_the_command_line_refuses_to_run_gpu_pairs_without_a_gpu(monkeypatch, capsys):
    from halo.fuzz import __main__ as cli
    monkeypatch.setattr(cli, "_cuda_problem", lambda: "no CUDA device")
    assert cli.main(["--target", "cuda", "--pairs", "1", "--no-progress"]) == 2
    assert "--compile-only" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--compile-only", "--pairs", "1"])
