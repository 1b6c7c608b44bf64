"""`halo.autoschedule(f)`: a schedule for every Func feeding the outputs, found by a beam
search over a space that holds halo's hand schedules, priced by a cost model on
features computed without lowering, and checked by running it before it is returned.

    result = halo.autoschedule(out, inputs={inp: image})
    print(result.source)      # the schedule as halo code
    result.apply()            # give the Funcs that schedule

    # measure candidates for a minute, keeping what was measured (tune.py)
    result = halo.autoschedule(out, inputs={inp: image}, measure=True, budget_s=60,
                               records="tuning.jsonl")

The pieces: `sizes` (the boxes planned for), `algorithm` (the Func graph), `space` and
`loop_nest` (the schedule space and a candidate's loops), `features`, `cost_model`,
`search`, `emit` (a candidate as schedule calls) and `validate` (the run that keeps a
schedule only if it is right at the estimate and at awkward sizes); for tuning, `tune`
(the rounds), `proposals`, `measure` (jobs and executors), `canonical` and `records`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from halo.autoschedule.algorithm import Algorithm
from halo.autoschedule.canonical import canonical
from halo.autoschedule.cost_model import CostModel, default_model
from halo.autoschedule.emit import schedule_calls
from halo.autoschedule.loop_nest import nests
from halo.autoschedule.measure import Executor, apply_schedule, fingerprint
from halo.autoschedule.records import Record, sizes_key
from halo.autoschedule.records import apply_best as _apply_recorded_best
from halo.autoschedule.reductions import rfactor_variants
from halo.autoschedule.search import Machine, Search, State, root_everything
from halo.autoschedule.sizes import PLACEHOLDER, resolve_sizes
from halo.autoschedule.tune import Problem, Tuned, recorded_best, tune
from halo.autoschedule.validate import Snapshot, Validator, apply_calls
from halo.errors import HaloError, ScheduleError
from halo.ir.nodes import ForKind
from halo.lang.environment import Environment
from halo.lang.func import Func
from halo.schedule.calls import Call, calls_source
from halo.schedule.serialize import schedules_source, schedules_to_json
from halo.target import Target, host_cache_bytes

DEFAULT_BEAM = 8
DEFAULT_BUDGET_S = 30.0
SEARCH_SHARE = 0.7  # of the budget; the rest validates (compiles and runs) candidates
TUNE_SEARCH_SHARE = 0.2  # of a tuning budget, for the beam search that starts it
CANDIDATES = 10  # different schedules the result lists (and checks, best first)


@dataclass
class Candidate:
    """One schedule the search found, with its predicted run time."""
    calls: list[Call]
    predicted_s: float

    @property
    def source(self) -> str:
        return calls_source(self.calls)


@dataclass
class AutoscheduleResult:
    """What `autoschedule` chose (already applied to the Funcs)."""
    source: str
    schedule: str
    predicted_s: float
    search_s: float
    candidates: list[Candidate]
    evaluations: int
    calls: list[Call] | None = field(repr=False)
    _outputs: list[Func] = field(repr=False)
    _unscheduled: Snapshot = field(repr=False)
    measured_s: float | None = None  # with measure=True or records=: its measured time
    curve: list[tuple[float, float]] = field(default_factory=list)  # (seconds, best so far)
    measurements: int = 0

    def apply(self) -> None:
        """Give the Funcs this schedule again (after they were rescheduled): their
        schedules as they were before `autoschedule`, then this one."""
        self._unscheduled.restore()
        if self.calls is None:  # a recorded schedule, applied as JSON
            apply_schedule(self._outputs, self.schedule)
        else:
            apply_calls(self._outputs, self.calls)


def autoschedule(f_or_pipeline, target: str | Target = "host", estimates: dict | None = None,
                 inputs: dict | None = None, budget_s: float | None = None, seed: int = 0,
                 beam_size: int = DEFAULT_BEAM, model: CostModel | None = None,
                 measure: bool = False, records: str | None = None,
                 executor: Executor | object | None = None, progress: bool | None = None
                 ) -> AutoscheduleResult:
    """Schedule every Func feeding the output(s) (a Func, a list of them, or a
    `halo.Pipeline`); see API.md "Autoscheduling" and docs/autoschedule.md. With
    `measure=True`, candidates are measured (through `executor`: default local worker
    processes; a `measure.Executor`, a `dask.distributed.Client` or a Ray context) for
    `budget_s` and the fastest is kept; with `records=` (a path), the
    measurements are kept there and a tuned problem's best is returned at once."""
    start = time.monotonic()
    outputs = _outputs(f_or_pipeline)
    target = Target.of(target)
    env = Environment.of(outputs)
    _check_unscheduled(env)
    alg = _algorithm(env, estimates, inputs)
    machine = Machine(target.num_threads, max(target.natural_vector_size(
        Func.type.fget(f)) for f in env.funcs.values()), host_cache_bytes())
    budget = DEFAULT_BUDGET_S if budget_s is None else budget_s
    search_s = min(budget * TUNE_SEARCH_SHARE, DEFAULT_BUDGET_S * SEARCH_SHARE) if measure \
        else budget * SEARCH_SHARE
    search = Search(model or default_model(), machine, beam_size, seed, start + search_s)
    variants = rfactor_variants(alg, outputs, machine.cores, machine.lanes,
                                lambda: _algorithm(Environment.of(outputs), estimates, inputs))
    starts = [State(alg), *(State(a, prefix=calls) for calls, a in variants)]
    unscheduled = Snapshot(outputs)
    if measure or records is not None:
        problem = Problem(outputs, alg, target, inputs, search, starts, _calls,
                          root_everything(alg), seed,
                          {k: alg.scalars[k] for k in env.params if k in alg.scalars})
        tuned = tune(problem, budget, executor, records, progress) if measure else \
            recorded_best(problem, records)
        if tuned is not None:
            return _tuned_result(tuned, outputs, unscheduled, search, start)
    candidates = _distinct(search.run(starts))
    chosen = None
    if time.monotonic() < start + budget:
        validator = Validator(outputs, env, alg, target, inputs, _calls(root_everything(alg)))
        for k, candidate in enumerate(candidates):  # the first always, the rest in budget
            if k and time.monotonic() >= start + budget:
                break
            if validator.check(candidate.calls):
                chosen = candidate
                break
    if chosen is None:  # the root schedule: always legal, nothing to check
        fallback = root_everything(alg)
        unscheduled.restore()
        chosen = Candidate(_calls(fallback), search.price([fallback])[0])
        apply_calls(outputs, chosen.calls)
    schedules = {name: g.schedule for name, g in Environment.of(outputs).funcs.items()}
    return AutoscheduleResult(schedules_source(schedules), schedules_to_json(schedules),
                              chosen.predicted_s, time.monotonic() - start,
                              candidates, search.evaluations, chosen.calls, outputs,
                              unscheduled)


def _distinct(ranked: list) -> list[Candidate]:
    """The first `CANDIDATES` different schedules among the ranked states (states that
    differ only in what emits the same calls are one schedule), cheapest first."""
    seen, out = set(), []
    for p in ranked:
        calls = _calls(p.state)
        text = calls_source(calls)
        if text not in seen:
            seen.add(text)
            out.append(Candidate(calls, p.seconds))
            if len(out) == CANDIDATES:
                break
    return out


def _tuned_result(tuned: Tuned, outputs: list[Func], unscheduled: Snapshot, search: Search,
                  start: float) -> AutoscheduleResult:
    schedules = {name: g.schedule for name, g in Environment.of(outputs).funcs.items()}
    chosen = Candidate(tuned.calls or [], tuned.predicted_s)
    return AutoscheduleResult(schedules_source(schedules), tuned.schedule, tuned.predicted_s,
                              time.monotonic() - start, [chosen], search.evaluations,
                              tuned.calls, outputs, unscheduled, tuned.measured_s,
                              tuned.curve, tuned.measurements)


def apply_best(f_or_pipeline, records: str, target: str | Target = "host",
               estimates: dict | None = None, inputs: dict | None = None) -> Record:
    """Give the (unscheduled) Funcs feeding the output(s) the best schedule that
    `halo.autoschedule(..., measure=True, records=records)` recorded for them on this
    machine; returns that record (`.seconds`, `.schedule`). The sizes, where given (as
    for `autoschedule`), pick among records of several sizes. Records of other machines
    are refused with a HaloError saying how they differ."""
    outputs = _outputs(f_or_pipeline)
    target = Target.of(target)
    env = Environment.of(outputs)
    _check_unscheduled(env)
    sizes = None
    if estimates or inputs or any(o.schedule.estimates is not None for o in outputs):
        alg = _algorithm(env, estimates, inputs)
        sizes = sizes_key(canonical(outputs), alg.outputs,
                          {name: box for name, (box, _) in alg.inputs.items()},
                          {k: alg.scalars[k] for k in env.params if k in alg.scalars})
    return _apply_recorded_best(outputs, records, fingerprint(target), sizes)


def _check_unscheduled(env: Environment) -> None:
    """The search plans from halo's default nests: a Func that has a schedule already
    (from a hand schedule, or an earlier autoschedule) is refused, naming what it has."""
    for f in env.funcs.values():
        s = f.schedule
        stage = next((k for k, st in enumerate(s.stages)
                      if st.transforms or st.rfactor or st.specializations or st.tensorize
                      or st.atomic or st.allow_races
                      or any(d.kind is not ForKind.SERIAL for d in st.dims)), None)
        what = "loop schedule" if stage is not None else "placement" if \
            s.compute_level is not None or s.store_level is not None else \
            "cache stage" if s.cache is not None else None
        if what is not None:
            raise ScheduleError(
                f"halo.autoschedule: Func {f.name} already has a {what}; autoschedule "
                "schedules an unscheduled algorithm (define it again, or call "
                "result.apply() to restore an earlier autoschedule result)")


def _outputs(f_or_pipeline) -> list[Func]:
    if isinstance(f_or_pipeline, Func):
        return [f_or_pipeline]
    outputs = getattr(f_or_pipeline, "outputs", f_or_pipeline)
    if isinstance(outputs, (list, tuple)) and outputs and all(isinstance(f, Func)
                                                               for f in outputs):
        return list(outputs)
    raise HaloError(f"halo.autoschedule takes a Func, a list of Funcs or a halo.Pipeline, "
                    f"not {f_or_pipeline!r}")


def _algorithm(env: Environment, estimates: dict | None, inputs: dict | None) -> Algorithm:
    """The algorithm at the planned sizes; inputs with no size are sized by what the
    outputs read of them."""
    input_boxes, output_boxes, scalars, unknown = resolve_sizes(env, estimates, inputs)
    if not unknown:
        return Algorithm.of(env, input_boxes, output_boxes, scalars)
    guess = {**input_boxes, **{name: tuple((0, PLACEHOLDER - 1)
                                           for _ in range(env.inputs[name].ndim))
                               for name in unknown}}
    alg = Algorithm.of(env, guess, output_boxes, scalars)
    read: dict[str, list] = {}
    for f in alg.funcs.values():
        for s in f.stages:
            box = alg.stage_box(s, alg.full_regions[f.name])
            for a in s.accesses:
                if a.is_input and a.callee in unknown:
                    region = alg.region_read(s, a, box)
                    read[a.callee] = [(min(x[0], y[0]), max(x[1], y[1])) for x, y in
                                      zip(read.get(a.callee, region), region, strict=True)]
    missing = []
    for name in unknown:
        for k, (lo, hi) in enumerate(read.get(name, [(0, PLACEHOLDER)] *
                                          env.inputs[name].ndim)):
            if hi >= PLACEHOLDER // 2 or lo <= -PLACEHOLDER // 2:
                missing.append(f"input {name} dimension {k}")
        if not any(m.startswith(f"input {name} ") for m in missing):
            input_boxes[name] = tuple((0, hi) for _, hi in read[name])
    if missing:
        raise HaloError("halo.autoschedule needs a size for " + "; ".join(missing) +
                        ": pass estimates={input: shape} or inputs={input: array}")
    return Algorithm.of(env, input_boxes, output_boxes, scalars)


def _calls(state: State) -> list[Call]:
    return list(state.prefix) + schedule_calls(state.alg, state.decided, state.locals_,
                          nests(state.alg, state.decided))


__all__ = ["autoschedule", "apply_best", "AutoscheduleResult", "Candidate"]
