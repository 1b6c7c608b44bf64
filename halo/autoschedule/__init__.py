"""`halo.autoschedule(f)`: a schedule for every Func feeding the outputs, found by a beam
search over a space that holds halo's hand schedules, priced by a cost model on
features computed without lowering, and checked by running it before it is returned.

    result = halo.autoschedule(out, inputs={inp: image})
    print(result.source)      # the schedule as halo code
    result.apply()            # give the Funcs that schedule

The pieces: `sizes` (the boxes planned for), `algorithm` (the Func graph), `space` and
`loop_nest` (the schedule space and a candidate's loops), `features`, `cost_model`,
`search`, `emit` (a candidate as schedule calls) and `validate` (the run that keeps a
schedule only if it is right at the estimate and at awkward sizes).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from halo.autoschedule.algorithm import Algorithm
from halo.autoschedule.cost_model import CostModel, analytical
from halo.autoschedule.emit import schedule_calls
from halo.autoschedule.loop_nest import nests
from halo.autoschedule.reductions import rfactor_variants
from halo.autoschedule.search import Machine, Search, State, root_everything
from halo.autoschedule.sizes import PLACEHOLDER, resolve_sizes
from halo.autoschedule.validate import Snapshot, Validator, apply_calls
from halo.errors import HaloError
from halo.lang.environment import Environment
from halo.lang.func import Func
from halo.schedule.calls import Call, calls_source
from halo.schedule.serialize import schedules_source, schedules_to_json
from halo.target import Target

DEFAULT_BEAM = 8
VALIDATED = 3  # candidates lowered and run, best first, until one passes


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
    calls: list[Call] = field(repr=False)
    _outputs: list[Func] = field(repr=False)
    _unscheduled: Snapshot = field(repr=False)

    def apply(self) -> None:
        """Give the Funcs this schedule again (after they were rescheduled): their
        schedules as they were before `autoschedule`, then this one."""
        self._unscheduled.restore()
        apply_calls(self._outputs, self.calls)


def autoschedule(f_or_pipeline, target: str | Target = "host", estimates: dict | None = None,
                 inputs: dict | None = None, budget_s: float | None = None, seed: int = 0,
                 beam_size: int = DEFAULT_BEAM, model: CostModel | None = None
                 ) -> AutoscheduleResult:
    """Schedule every Func feeding the output(s) (a Func, a list of them, or a
    `halo.Pipeline`); see API.md "Autoscheduling" and docs/autoschedule.md."""
    start = time.monotonic()
    outputs = _outputs(f_or_pipeline)
    target = Target.of(target)
    env = Environment.of(outputs)
    alg = _algorithm(env, estimates, inputs)
    machine = Machine(target.num_threads, max(target.natural_vector_size(
        Func.type.fget(f)) for f in env.funcs.values()))
    deadline = start + (budget_s if budget_s is not None else 30.0) * 0.7
    search = Search(model or analytical(), machine, beam_size, seed, deadline)
    variants = rfactor_variants(alg, outputs, machine.cores, machine.lanes,
                                lambda: _algorithm(Environment.of(outputs), estimates, inputs))
    ranked = search.run([State(alg), *(State(a, prefix=calls) for calls, a in variants)])
    fallback = root_everything(alg)
    validator = Validator(outputs, env, alg, target, inputs, _calls(fallback))
    tried = []
    for priced in ranked[:VALIDATED]:
        calls = _calls(priced.state)
        tried.append(Candidate(calls, priced.seconds))
        if validator.check(calls):
            break
    else:
        calls = _calls(fallback)
        validator.snapshot.restore()
        apply_calls(outputs, calls)
        tried.append(Candidate(calls, search.price([fallback])[0]))
    chosen = tried[-1]
    schedules = {name: g.schedule for name, g in Environment.of(outputs).funcs.items()}
    return AutoscheduleResult(schedules_source(schedules), schedules_to_json(schedules),
                              chosen.predicted_s, time.monotonic() - start,
                              [Candidate(_calls(p.state), p.seconds) for p in ranked],
                              search.evaluations, chosen.calls, outputs, validator.snapshot)


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


__all__ = ["autoschedule", "AutoscheduleResult", "Candidate"]
