"""Schedules as data and as source: JSON, and halo Python code a user could have typed.

Both go through one *replay plan*: the list of schedule calls (`split`, `fuse`,
`reorder`, `vectorize`, ..., `compute_at`, `bound`, ...) that rebuilds a pipeline's
records. `schedules_source` prints the plan; `apply_schedules_json` executes it on the
Funcs of a freshly defined algorithm through the ordinary (validated) methods, so a
pasted-back or reloaded schedule lowers to the same IR. They work on the schedules and
objects of one pipeline, by name; `lang/schedule_files.py` finds those from the
pipeline's output (`halo.schedule_source(f)`, `schedule_to_json(f)`, `apply_json`).

The plan first makes the Funcs that `cache_read`/`cache_write` created (in the order
they were made, `B_global = B.cache_read(...)`), then schedules every Func: for each
stage the calls the user made on it, as written (`tile`, `vectorize(x, 8)`; see
`as_written`), each specialization made among them where it was (`f.specialize(cond)`
copies the stage as it is then, and its own calls follow), then placement. A Func made by
`rfactor` is scheduled right after the rfactor call that makes it; placements at its
loops wait until the end.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from halo.analysis.loops import TailStrategy
from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import ForKind
from halo.ir.types import int32
from halo.schedule.calls import Call, IntrinsicRef, StageRef, calls_source
from halo.schedule.conditions import condition_to_json
from halo.schedule.gpu import TensorIntrinsic
from halo.schedule.records import (
    CacheKind,
    CacheOrigin,
    Dim,
    FuncSchedule,
    Fuse,
    LoopCall,
    LoopLevel,
    MemoryScope,
    PlacementKind,
    Reorder,
    RFactor,
    Specialization,
    Split,
    StageSchedule,
    Tensorize,
)
from halo.schedule.rfactor import default_name

_KIND_CALL = {ForKind.VECTORIZED: "vectorize", ForKind.UNROLLED: "unroll",
              ForKind.PARALLEL: "parallel", ForKind.VTHREAD: "vthread"}
# Loops bound together in one call (the call checks that they are adjacent).
_GROUP_CALL = {ForKind.GPU_BLOCK: "gpu_blocks", ForKind.GPU_THREAD: "gpu_threads"}

def replay_plan(schedules: dict[str, FuncSchedule]) -> list[Call]:
    """The calls that rebuild `schedules` (Func name -> its schedule), in order."""
    made = sorted(((name, s.cache) for name, s in schedules.items() if s.cache is not None),
                  key=lambda item: item[1].seq)
    plan: list[Call] = [_cache_call(name, origin) for name, origin in made]
    by_rfactor = made_by_rfactor(schedules)
    for name, sched in schedules.items():
        if name not in by_rfactor:
            plan += _func_calls(name, sched, schedules)
    late = [c for c in plan if any(isinstance(a, StageRef) and a.func in by_rfactor
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


def _cache_call(name: str, origin: CacheOrigin) -> Call:
    kwargs = () if origin.readers is None else \
        (("readers", tuple(StageRef(r, 0) for r in origin.readers)),)
    return Call(StageRef(origin.source), f"cache_{origin.kind.value}", (origin.scope.value,),
                kwargs,
                result=name)


def _stage_calls(name: str, k: int, stage: StageSchedule,
                 schedules: dict[str, FuncSchedule]) -> list[Call]:
    """The calls that rebuild stage `k` of Func `name`: those that made the schedule an
    rfactor replaced, the rfactor, then the stage's calls as written, each
    specialization made where it was (after the calls it shares with the stage) and
    followed by its own calls."""
    calls: list[Call] = []
    at = StageRef(name, k)
    rf = stage.rfactor
    if rf is not None:
        calls += _stage_calls(name, k, rf.prior, schedules)
        kwargs = () if rf.intermediate == default_name(name, k) else \
            (("name", rf.intermediate),)
        calls.append(Call(at, "rfactor", (rf.loop, rf.var), kwargs, rf.intermediate))
        calls += _func_calls(rf.intermediate, schedules[rf.intermediate], schedules)
    done = 0
    for made_after, spec in _specialized_after(stage):
        calls += [_call(at, c) for c in stage.calls[done:made_after]]
        calls.append(Call(StageRef(name, k), "specialize", (spec.condition,)))
        branch_ref = StageRef(name, k, spec.condition)
        calls += [_call(branch_ref, c) for c in spec.schedule.calls[made_after:]]
        done = made_after
    return calls + [_call(at, c) for c in stage.calls[done:]]


def _specialized_after(stage: StageSchedule) -> list[tuple[int, Specialization]]:
    """Each specialization of `stage` with the number of the stage's calls made before
    it: the calls it shares with the stage (a specialization starts as a copy of the
    stage, calls included). Where later calls happen to agree too, replaying them before
    the copy gives the same records; the counts are kept in order so the
    specializations are made in order."""
    counts = []
    for spec in stage.specializations:
        mine = spec.schedule.calls
        pairs = enumerate(zip(stage.calls, mine, strict=False))
        shared = next((i for i, (a, b) in pairs if a != b), min(len(stage.calls), len(mine)))
        counts.append(shared)
    for i in range(len(counts) - 2, -1, -1):
        counts[i] = min(counts[i], counts[i + 1])
    return list(zip(counts, stage.specializations, strict=True))


def _call(at: StageRef, c: LoopCall) -> Call:
    """A stage's call as a schedule `Call` (a tensorize names its Intrinsic)."""
    if c.method == "tensorize":
        return Call(at, c.method, (c.args[0], IntrinsicRef(c.args[1])), c.kwargs)
    return Call(at, c.method, c.args, c.kwargs)


def _placement_calls(name: str, sched: FuncSchedule) -> list[Call]:
    calls = []
    made = sched.cache  # a cache Func starts computed at root, in its scope
    for verb, level in (("compute", sched.compute_level), ("store", sched.store_level)):
        if level is None or (made and verb == "compute" and level.kind is PlacementKind.ROOT):
            continue
        if level.kind is PlacementKind.AT:
            calls.append(Call(StageRef(name), f"{verb}_at", (StageRef(level.func, level.stage),
                                                              level.var)))
        else:
            calls.append(Call(StageRef(name), f"{verb}_{level.kind.value}"))
    if sched.memory_scope is not MemoryScope.AUTO and \
            not (made and sched.memory_scope is made.scope):
        calls.append(Call(StageRef(name), "store_in", (sched.memory_scope.value,)))
    if sched.storage_order is not None:
        calls.append(Call(StageRef(name), "reorder_storage", sched.storage_order))
    if sched.buffers > 1:
        calls.append(Call(StageRef(name), "double_buffer",
                          (sched.buffers,) if sched.buffers != 2 else ()))
    for var, (lo, extent) in sched.bounds.items():
        calls.append(Call(StageRef(name), "bound", (var, _bound_arg(lo), _bound_arg(extent))))
    if sched.estimates is not None:
        calls.append(Call(StageRef(name), "set_estimates",
                          ([list(e) for e in sched.estimates],)))
    return calls


def _bound_arg(e: n.Expr) -> object:
    """A bound's min or extent as the user may have written it: an int for an int32
    constant."""
    return e.value if isinstance(e, n.Const) and e.type == int32 else e


# ------------------------------------------------------------------------------ source


def schedules_source(schedules: dict[str, FuncSchedule]) -> str:
    """`schedules` (Func name -> its schedule, producers first) as halo Python code. It
    refers to Funcs, inputs, RDoms and Intrinsics by their names, declares the loop Vars
    it introduces, and names the Funcs that cache_read/cache_write make after
    themselves."""
    return calls_source(replay_plan(schedules))


# -------------------------------------------------------------------------------- JSON


def schedules_to_json(schedules: dict[str, FuncSchedule]) -> str:
    """`schedules` (Func name -> its schedule), as JSON."""
    return json.dumps({name: _sched_dict(s) for name, s in schedules.items()}, indent=1)


def apply_schedules_json(text: str, funcs: Mapping[str, object], inputs: Mapping[str, object],
                         condition: Callable[[list], object],
                         intrinsics: Mapping[str, TensorIntrinsic]) -> None:
    """Apply schedules saved by `schedules_to_json` to the (unscheduled) Funcs of a
    pipeline (`funcs` and `inputs` by name), through their schedule methods; the Funcs
    that cache_read/cache_write made are made again. `condition` makes a specialize
    condition from its JSON form; `intrinsics` are the Intrinsics a tensorize may name."""
    data = json.loads(text)
    made = {name for name, d in data.items() if d.get("cache")} | _intermediates_in(data)
    unknown = set(data) - set(funcs) - made
    if unknown:
        raise ScheduleError(f"the schedule names Func(s) {', '.join(sorted(unknown))} that "
                            f"are not in this pipeline ({', '.join(funcs)})")
    schedules = {name: _sched_from_dict(d, condition) for name, d in data.items()}
    objects = {**inputs, **funcs}
    for call in replay_plan(schedules):
        execute(call, objects, intrinsics)


def _intermediates_in(data: dict) -> set[str]:
    """Names of the Funcs that the rfactor calls of a JSON schedule make."""
    made = set()
    for d in data.values():
        for stage in d.get("stages", ()):
            while "rfactor" in stage:
                made.add(stage["rfactor"]["intermediate"])
                stage = stage["rfactor"]["prior"]
    return made


def execute(call: Call, funcs: dict, intrinsics: Mapping[str, TensorIntrinsic]) -> None:
    """Run one schedule call on the Funcs (and inputs) of a pipeline, by name, with the
    Intrinsics it may name; a Func the call makes is added to `funcs`."""
    ref = call.target
    if ref.func not in funcs:
        raise ScheduleError(f"the schedule calls {ref.func}.{call.method}(...), but this "
                            f"pipeline has no Func or input named {ref.func}")
    f = funcs[ref.func]
    target = f if ref.stage == 0 else f.update(ref.stage - 1)
    if ref.condition is not None:
        target = target.specialize(ref.condition)
    args = [_resolve(a, funcs, intrinsics) for a in call.args]
    kwargs = {k: _resolve(v, funcs, intrinsics) for k, v in call.kwargs}
    result = getattr(target, call.method)(*args, **kwargs)
    if call.result is not None:
        if result.name != call.result:
            raise ScheduleError(f"{ref.func}.{call.method}(...) made {result.name}, but the "
                                f"schedule expects {call.result}: apply the schedule to a "
                                "freshly defined algorithm")
        funcs[call.result] = result


def _resolve(a: object, funcs: dict, intrinsics: Mapping[str, TensorIntrinsic]) -> object:
    if isinstance(a, StageRef):
        g = funcs[a.func]
        return g if a.stage == 0 else g.update(a.stage - 1)
    if isinstance(a, IntrinsicRef):
        if a.name not in intrinsics:
            raise ScheduleError(f"the schedule tensorizes with the Intrinsic {a.name}; pass "
                                f"it to apply_json(..., intrinsics=[{a.name}])")
        return intrinsics[a.name]
    if isinstance(a, tuple):
        return [_resolve(x, funcs, intrinsics) for x in a]
    return a


def _sched_dict(s: FuncSchedule) -> dict:
    bounds = {v: (_bound_arg(lo), _bound_arg(extent)) for v, (lo, extent) in s.bounds.items()}
    for v, (lo, extent) in bounds.items():
        if not (isinstance(lo, int) and isinstance(extent, int)):
            raise ScheduleError(f"bound({v}, ...) with an expression can't be saved as JSON; "
                                "use schedule_source() instead")
    c = s.cache
    return {
        "stages": [_stage_dict(st) for st in s.stages],
        "compute_level": _level_dict(s.compute_level),
        "store_level": _level_dict(s.store_level),
        "bounds": {v: list(b) for v, b in bounds.items()},
        "estimates": s.estimates,
        "memory_scope": s.memory_scope.value,
        **({"buffers": s.buffers} if s.buffers > 1 else {}),
        **({"storage_order": list(s.storage_order)} if s.storage_order else {}),
        "cache": None if c is None else {
            "kind": c.kind.value, "source": c.source, "scope": c.scope.value,
            "readers": None if c.readers is None else list(c.readers), "seq": c.seq},
    }


def _stage_dict(st: StageSchedule) -> dict:
    d: dict = {"dims": [[x.name, x.kind.value, x.pure] for x in st.dims],
               "transforms": [_transform_dict(t) for t in st.transforms],
               "specializations": [{"condition": condition_to_json(sp.condition.node),
                                    "schedule": _stage_dict(sp.schedule)}
                                   for sp in st.specializations],
               "tensorize": None if st.tensorize is None else [st.tensorize.var,
                                                               st.tensorize.intrinsic],
               "calls": [[c.method, list(c.args), dict(c.kwargs)] for c in st.calls]}
    if st.atomic:
        d["atomic"] = True
    if st.allow_races:
        d["allow_races"] = True
    if st.rfactor is not None:
        rf = st.rfactor
        d["rfactor"] = {"loop": rf.loop, "var": rf.var, "intermediate": rf.intermediate,
                        "prior": _stage_dict(rf.prior)}
    return d


def _level_dict(level: LoopLevel | None) -> dict | None:
    if level is None:
        return None
    return {"kind": level.kind.value, "func": level.func, "stage": level.stage,
            "var": level.var}


def _transform_dict(t: Split | Fuse | Reorder) -> dict:
    if isinstance(t, Split):
        return {"split": [t.old, t.outer, t.inner, t.factor, t.tail.value]}
    if isinstance(t, Fuse):
        return {"fuse": [t.outer, t.inner, t.fused]}
    return {"reorder": list(t.names)}


def _sched_from_dict(d: dict, condition: Callable[[list], object]) -> FuncSchedule:
    def level(lv):
        return None if lv is None else LoopLevel(PlacementKind(lv["kind"]), lv["func"],
                                                 lv["stage"], lv["var"])

    c = d.get("cache")
    return FuncSchedule(
        stages=[_stage_from_dict(st, condition) for st in d["stages"]],
        compute_level=level(d["compute_level"]), store_level=level(d["store_level"]),
        bounds={v: (n.const(lo), n.const(extent)) for v, (lo, extent) in d["bounds"].items()},
        estimates=[tuple(e) for e in d["estimates"]] if d["estimates"] else None,
        memory_scope=MemoryScope(d["memory_scope"]),
        buffers=d.get("buffers", 1),
        storage_order=tuple(d["storage_order"]) if d.get("storage_order") else None,
        cache=None if c is None else CacheOrigin(
            CacheKind(c["kind"]), c["source"], MemoryScope(c["scope"]),
            None if c["readers"] is None else tuple(c["readers"]), c["seq"]))


def _stage_from_dict(st: dict, condition: Callable[[list], object]) -> StageSchedule:
    def transform(t: dict):
        if "split" in t:
            old, outer, inner, factor, *tail = t["split"]
            return Split(old, outer, inner, factor,
                         TailStrategy(tail[0]) if tail else TailStrategy.AUTO)
        if "fuse" in t:
            return Fuse(*t["fuse"])
        return Reorder(tuple(t["reorder"]))

    tensorize = st.get("tensorize")
    rf = st.get("rfactor")
    stage = StageSchedule(
        [Dim(nm, ForKind(kind), pure) for nm, kind, pure in st["dims"]],
        [transform(t) for t in st["transforms"]],
        atomic=st.get("atomic", False), allow_races=st.get("allow_races", False),
        rfactor=None if rf is None else RFactor(rf["loop"], rf["var"], rf["intermediate"],
                                                _stage_from_dict(rf["prior"], condition)),
        specializations=[
            Specialization(condition(sp["condition"]),
                           _stage_from_dict(sp["schedule"], condition))
            for sp in st.get("specializations", ())],
        tensorize=None if tensorize is None else Tensorize(*tensorize))
    if "calls" in st:
        stage.calls = [LoopCall(method, tuple(args), tuple(kwargs.items()))
                       for method, args, kwargs in st["calls"]]
    else:
        stage.calls = _calls_from_loops(stage)
    return stage


def _calls_from_loops(stage: StageSchedule) -> list[LoopCall]:
    """Calls that rebuild a stage's records, for JSON saved before schedules kept their
    calls as written: its permissions, a split, fuse or reorder per transform, then the
    bindings and kinds of the loops, then a tensorize."""
    calls = [LoopCall(method) for method, on in (("atomic", stage.atomic),
                                                 ("allow_race_conditions", stage.allow_races))
             if on]
    for t in stage.transforms:
        if isinstance(t, Split):
            kwargs = () if t.tail is TailStrategy.AUTO else (("tail", t.tail.value),)
            calls.append(LoopCall("split", (t.old, t.outer, t.inner, t.factor), kwargs))
        elif isinstance(t, Fuse):
            calls.append(LoopCall("fuse", (t.outer, t.inner, t.fused)))
        else:
            calls.append(LoopCall("reorder", t.names))
    for kind, method in _GROUP_CALL.items():
        group = tuple(d.name for d in stage.dims if d.kind is kind)
        if group:
            calls.append(LoopCall(method, group))
    calls += [LoopCall(_KIND_CALL[d.kind], (d.name,)) for d in stage.dims
              if d.kind in _KIND_CALL]
    if stage.tensorize is not None:
        calls.append(LoopCall("tensorize", (stage.tensorize.var, stage.tensorize.intrinsic)))
    return calls
