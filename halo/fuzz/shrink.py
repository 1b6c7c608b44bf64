"""Shrinking a failing case: fewer stages first, then fewer schedule calls.

A smaller case "still fails" when it gives the same kind of outcome (and, for
exceptions, internal or HaloError, the same exception type). Stages: every stage is
tried as the output (the pipeline keeps only what it reads), and the smallest that still
fails wins. Calls: each
call is dropped in turn, last first, and stays dropped if the case still fails; the last
call of an illegal schedule (the one that breaks the rule) is always kept.

An illegal schedule that halo accepted is not shrunk: what makes its last call illegal
may be any earlier call (a vthread is illegal inside the thread loops another call
binds), and a smaller case where that call is gone is accepted because it is legal, which
looks the same. There is no oracle for "still illegal", so the case is written as drawn.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from halo.errors import HaloError
from halo.fuzz.check import ACCEPTED, Case, NotApplicable, Outcome, case_program
from halo.random_programs.random_pipeline import random_pipeline

RunMany = Callable[[list[Case]], list[Outcome]]


def _signature(o: Outcome) -> tuple[str, str]:
    """What a smaller case must repeat: the kind, and for errors the exception's type (a
    legal case shrunk until a different error rejects it is another failure)."""
    return o.kind, o.detail.split(":", 1)[0] if o.kind in ("internal", "rejected") else ""


def shrink(case: Case, outcome: Outcome, run_many: RunMany) -> tuple[Case, Outcome]:
    """The smallest variant of `case` found that fails like `outcome`, and its outcome."""
    if outcome.kind == ACCEPTED:
        return case, outcome
    want = _signature(outcome)
    full = random_pipeline(case.program_seed)
    names = sorted((s.name for s in full.stages[:-1]),
                   key=lambda nm: len(full.truncated(nm).stages))
    candidates = [replace(case, output=nm, keep=None) for nm in names]
    for cand, got in zip(candidates, run_many(candidates), strict=True):
        if _signature(got) == want:
            case, outcome = cand, got
            break
    try:
        _, calls, _ = case_program(replace(case, keep=None))
    except (HaloError, NotApplicable):  # drawing the schedule fails: no calls to drop
        return case, outcome
    keep = list(range(len(calls)))
    last = len(calls) - 1
    for i in reversed(range(len(calls))):
        if not case.legal and i == last:
            continue
        trial = replace(case, keep=tuple(k for k in keep if k != i))
        (got,) = run_many([trial])
        if _signature(got) == want:
            keep, case, outcome = list(trial.keep), trial, got
    return case, outcome
