"""Schedules as data and as source: JSON, and halo Python code a user could have typed.

Both go through one *replay plan*: the list of schedule calls (`split`, `fuse`,
`reorder`, `vectorize`, ..., `compute_at`, `bound`, ...) that rebuilds a pipeline's
records. `schedule_source(f)` prints the plan; `apply_json(f, text)` executes it on the
Funcs of a freshly defined algorithm through the ordinary (validated) methods, so a
pasted-back or reloaded schedule lowers to the same IR.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from halo.errors import ScheduleError
from halo.ir.nodes import ForKind
from halo.schedule.records import (
    Dim,
    FuncSchedule,
    Fuse,
    LoopLevel,
    Reorder,
    RFactor,
    Split,
    StageSchedule,
)
from halo.schedule.rfactor import default_name

_KIND_CALL = {ForKind.VECTORIZED: "vectorize", ForKind.UNROLLED: "unroll",
              ForKind.PARALLEL: "parallel"}


@dataclass(frozen=True)
class Call:
    """One schedule call: `target.method(*args, **kwargs)`. `target` is a Func name and
    a stage (0: the Func itself, i: `.update(i - 1)`); Func-valued arguments are
    `StageRef`s, loop names are strings. `result` names the Func a call returns (rfactor's
    intermediate), which later calls refer to."""
    func: str
    stage: int
    method: str
    args: tuple
    kwargs: tuple[tuple[str, object], ...] = ()
    result: str | None = None


@dataclass(frozen=True)
class StageRef:
    func: str
    stage: int


def replay_plan(schedules: dict[str, FuncSchedule]) -> list[Call]:
    """The calls that rebuild `schedules` (Func name -> its schedule), in order. A Func
    made by rfactor is scheduled right after the rfactor call that makes it; placements
    at its loops wait until the end."""
    made = made_by_rfactor(schedules)
    plan: list[Call] = []
    for name, sched in schedules.items():
        if name not in made:
            plan += _func_calls(name, sched, schedules)
    late = [c for c in plan if any(isinstance(a, StageRef) and a.func in made
                                   for a in c.args)]
    return [c for c in plan if c not in late] + late


def made_by_rfactor(schedules: dict[str, FuncSchedule]) -> set[str]:
    """Names of the Funcs that rfactor calls in `schedules` make."""
    made = set()
    for sched in schedules.values():
        for stage in sched.stages:
            while stage.rfactor is not None:
                made.add(stage.rfactor.intermediate)
                stage = stage.rfactor.prior
    return made


def _func_calls(name: str, sched: FuncSchedule, schedules: dict[str, FuncSchedule]
                ) -> list[Call]:
    calls = []
    for k, stage in enumerate(sched.stages):
        calls += _stage_calls(name, k, stage, schedules)
    return calls + _placement_calls(name, sched)


def _stage_calls(name: str, k: int, stage: StageSchedule,
                 schedules: dict[str, FuncSchedule]) -> list[Call]:
    calls: list[Call] = []
    rf = stage.rfactor
    if rf is not None:
        calls += _stage_calls(name, k, rf.prior, schedules)
        kwargs = () if rf.intermediate == default_name(name, k) else \
            (("name", rf.intermediate),)
        calls.append(Call(name, k, "rfactor", (rf.loop, rf.var), kwargs, rf.intermediate))
        calls += _func_calls(rf.intermediate, schedules[rf.intermediate], schedules)
    if stage.atomic:
        calls.append(Call(name, k, "atomic", ()))
    if stage.allow_races:
        calls.append(Call(name, k, "allow_race_conditions", ()))
    for t in stage.transforms:
        if isinstance(t, Split):
            kwargs = () if t.tail == "auto" else (("tail", t.tail),)
            calls.append(Call(name, k, "split", (t.old, t.outer, t.inner, t.factor), kwargs))
        elif isinstance(t, Fuse):
            calls.append(Call(name, k, "fuse", (t.outer, t.inner, t.fused)))
        else:
            calls.append(Call(name, k, "reorder", t.names))
    for d in stage.dims:
        if d.kind in _KIND_CALL:
            calls.append(Call(name, k, _KIND_CALL[d.kind], (d.name,)))
    return calls


def _placement_calls(name: str, sched: FuncSchedule) -> list[Call]:
    calls = []
    for verb, level in (("compute", sched.compute_level), ("store", sched.store_level)):
        if level is None:
            continue
        if level.kind == "at":
            calls.append(Call(name, 0, f"{verb}_at", (StageRef(level.func, level.stage),
                                                       level.var)))
        else:
            calls.append(Call(name, 0, f"{verb}_{level.kind}", ()))
    if sched.memory_scope != "auto":
        calls.append(Call(name, 0, "store_in", (sched.memory_scope,)))
    for var, (lo, extent) in sched.bounds.items():
        calls.append(Call(name, 0, "bound", (var, lo, extent)))
    if sched.estimates is not None:
        calls.append(Call(name, 0, "set_estimates", ([list(e) for e in sched.estimates],)))
    return calls


# ------------------------------------------------------------------------------ source


def schedule_source(f) -> str:
    """The schedule of every Func feeding `f` as halo Python code. It refers to Funcs
    and RDoms by their names and declares the loop Vars it introduces."""
    from halo.lang.environment import Environment
    env = Environment.of([f])
    plan = replay_plan({name: g.schedule for name, g in env.funcs.items()})
    names: list[str] = []
    for call in plan:
        for a in call.args:
            if isinstance(a, str) and "." not in a and a not in names and \
                    call.method not in ("store_in",):
                names.append(a)
    lines = []
    if names:
        lhs = ", ".join(names) + ("," if len(names) == 1 else "")
        lines.append(f'{lhs} = halo.vars("{" ".join(names)}")')
    lines += [_call_text(c) for c in plan]
    return "\n".join(lines) + "\n"


def _target_text(func: str, stage: int) -> str:
    return func if stage == 0 else f"{func}.update({stage - 1})"


def _arg_text(a: object, method: str) -> str:
    if isinstance(a, StageRef):
        return _target_text(a.func, a.stage)
    if isinstance(a, str) and method != "store_in":
        return a  # a loop name, as the Var (or RVar, `r.x`) a user would write
    if hasattr(a, "node"):
        from halo.ir.printer import expr_to_str
        return expr_to_str(a.node)
    return repr(a)


def _call_text(c: Call) -> str:
    args = [_arg_text(a, c.method) for a in c.args]
    args += [f"{k}={v!r}" for k, v in c.kwargs]
    result = "" if c.result is None else f"{c.result} = "
    return f"{result}{_target_text(c.func, c.stage)}.{c.method}({', '.join(args)})"


# -------------------------------------------------------------------------------- JSON


def schedule_to_json(f) -> str:
    """The records of every Func feeding `f`, as JSON."""
    from halo.lang.environment import Environment
    env = Environment.of([f])
    return json.dumps({name: _sched_dict(g.schedule) for name, g in env.funcs.items()},
                      indent=1)


def apply_json(f, text: str) -> None:
    """Apply a schedule saved by `schedule_to_json` to the (unscheduled) Funcs feeding
    `f`, matched by name."""
    from halo.lang.environment import Environment
    env = Environment.of([f])
    data = json.loads(text)
    unknown = set(data) - set(env.funcs) - _intermediates_in(data)
    if unknown:
        raise ScheduleError(f"the schedule names Func(s) {', '.join(sorted(unknown))} that "
                            f"are not in this pipeline ({', '.join(env.funcs)})")
    schedules = {name: _sched_from_dict(d) for name, d in data.items()}
    funcs = dict(env.funcs)
    for call in replay_plan(schedules):
        execute(call, funcs)


def _intermediates_in(data: dict) -> set[str]:
    """Names of the Funcs that the rfactor calls of a JSON schedule make."""
    made = set()
    for d in data.values():
        for stage in d.get("stages", ()):
            while "rfactor" in stage:
                made.add(stage["rfactor"]["intermediate"])
                stage = stage["rfactor"]["prior"]
    return made


def execute(call: Call, funcs: dict) -> None:
    """Run one schedule call on the Funcs of a pipeline (`funcs`, by name; a Func the
    call makes joins it)."""
    f = funcs[call.func]
    target = f if call.stage == 0 else f.update(call.stage - 1)
    args = [_resolve(a, funcs) for a in call.args]
    result = getattr(target, call.method)(*args, **dict(call.kwargs))
    if call.result is not None:
        funcs[call.result] = result


def _resolve(a: object, funcs: dict) -> object:
    if isinstance(a, StageRef):
        g = funcs[a.func]
        return g if a.stage == 0 else g.update(a.stage - 1)
    return a


def _sched_dict(s: FuncSchedule) -> dict:
    for v, (lo, extent) in s.bounds.items():
        if not (isinstance(lo, int) and isinstance(extent, int)):
            raise ScheduleError(f"bound({v}, ...) with an expression can't be saved as JSON; "
                                "use schedule_source() instead")
    return {
        "stages": [_stage_dict(st) for st in s.stages],
        "compute_level": _level_dict(s.compute_level),
        "store_level": _level_dict(s.store_level),
        "bounds": {v: list(b) for v, b in s.bounds.items()},
        "estimates": s.estimates,
        "memory_scope": s.memory_scope,
    }


def _stage_dict(st: StageSchedule) -> dict:
    d: dict = {"dims": [[x.name, x.kind.value, x.pure] for x in st.dims],
               "transforms": [_transform_dict(t) for t in st.transforms]}
    if st.atomic:
        d["atomic"] = True
    if st.allow_races:
        d["allow_races"] = True
    if st.rfactor is not None:
        rf = st.rfactor
        d["rfactor"] = {"loop": rf.loop, "var": rf.var, "intermediate": rf.intermediate,
                        "prior": _stage_dict(rf.prior)}
    return d


def _stage_from_dict(d: dict) -> StageSchedule:
    rf = d.get("rfactor")
    return StageSchedule(
        [Dim(nm, ForKind(kind), pure) for nm, kind, pure in d["dims"]],
        [_transform_from_dict(t) for t in d["transforms"]],
        atomic=d.get("atomic", False), allow_races=d.get("allow_races", False),
        rfactor=None if rf is None else RFactor(rf["loop"], rf["var"], rf["intermediate"],
                                                _stage_from_dict(rf["prior"])))


def _transform_from_dict(t: dict) -> Split | Fuse | Reorder:
    if "split" in t:
        return Split(*t["split"])
    if "fuse" in t:
        return Fuse(*t["fuse"])
    return Reorder(tuple(t["reorder"]))


def _level_dict(level: LoopLevel | None) -> dict | None:
    if level is None:
        return None
    return {"kind": level.kind, "func": level.func, "stage": level.stage, "var": level.var}


def _transform_dict(t: Split | Fuse | Reorder) -> dict:
    if isinstance(t, Split):
        return {"split": [t.old, t.outer, t.inner, t.factor, t.tail]}
    if isinstance(t, Fuse):
        return {"fuse": [t.outer, t.inner, t.fused]}
    return {"reorder": list(t.names)}


def _sched_from_dict(d: dict) -> FuncSchedule:
    def level(lv):
        return None if lv is None else LoopLevel(lv["kind"], lv["func"], lv["stage"], lv["var"])

    return FuncSchedule(
        stages=[_stage_from_dict(st) for st in d["stages"]],
        compute_level=level(d["compute_level"]), store_level=level(d["store_level"]),
        bounds={v: tuple(b) for v, b in d["bounds"].items()},
        estimates=[tuple(e) for e in d["estimates"]] if d["estimates"] else None,
        memory_scope=d["memory_scope"])
