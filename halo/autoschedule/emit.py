"""A search state as halo schedule calls (`halo.schedule.calls.Call`): what applies it to
the user's Funcs, and, once applied, what `halo.schedule_source` prints.

Per Func, consumers first: `cache_write("local")` where the state keeps an output's
reduction in registers, `cache_read("global")` where it packs an input into panels,
then each stage's splits, vectorize, reorder, fuse, unroll and parallel, then its
placement (inline is halo's default for a pure Func and needs no call). The loop names
are those `space.stage_loops` gives the search.
"""
from __future__ import annotations

from halo.autoschedule.algorithm import Algorithm
from halo.autoschedule.loop_nest import FuncNest, decision_of
from halo.autoschedule.space import AT, INLINE, OUTER, ROOT, WHOLE, Decision, Loop, Nest
from halo.schedule.calls import Call, StageRef


def schedule_calls(alg: Algorithm, decisions: dict[str, Decision], locals_: tuple[str, ...],
                   func_nests: dict[str, FuncNest]) -> list[Call]:
    """The calls that give the pipeline the schedule of `decisions`."""
    calls = [Call(StageRef(name), "cache_write", ("local",), result=f"{name}_local")
             for name in locals_]
    for f in alg.funcs.values():  # packed panels; one inlined is no copy
        if f.copy_of is not None and decision_of(decisions, f.name).placement.kind != INLINE:
            readers = tuple(StageRef(c) for c in dict.fromkeys(c for c, _ in f.consumers))
            calls.append(Call(StageRef(f.copy_of), "cache_read", ("global", readers),
                              result=f.name))
    for f in reversed(list(alg.funcs.values())):
        p = decision_of(decisions, f.name).placement
        if p.kind == INLINE and not f.is_output:
            continue
        for s, loops in zip(f.stages, func_nests[f.name].loops, strict=True):
            calls += _stage_calls(StageRef(f.name, s.index), f.dims, s,
                                  decision_of(decisions, f.name).nest, loops)
        me = StageRef(f.name)
        if p.kind == AT:
            site = StageRef(p.consumer, p.stage)
            if p.store_loop is not None:
                calls.append(Call(me, "store_at", (site, _loop(func_nests, p, p.store_loop))))
            calls.append(Call(me, "compute_at", (site, _loop(func_nests, p, p.loop))))
        elif p.kind == ROOT and not f.is_output:
            # Said even where it is halo's default (a Func with updates): an inline
            # reduction's default is inside its consumer.
            calls.append(Call(me, "compute_root"))
    return calls


def _loop(func_nests: dict[str, FuncNest], p, k: int) -> str:
    return func_nests[p.consumer].loops[p.stage][k].name


def _stage_calls(at: StageRef, dims: tuple[str, ...], s, nest: Nest | None,
                 loops: list[Loop]) -> list[Call]:
    """A stage's loop calls: splits, vectorize, reorder, fuse, unroll, parallel."""
    if nest is None:
        return []
    calls = []
    order = []  # the loops as the calls so far leave them, outermost first
    factors = {d: t for d, t in zip(dims, nest.tiles, strict=True) if t not in (OUTER, WHOLE)}
    for dim in s.loop_vars:
        if dim in factors:
            calls.append(Call(at, "split", (dim, f"{dim}o", f"{dim}i", factors[dim])))
            order += [f"{dim}o", f"{dim}i"]
        else:
            order.append(dim)
    vector = next((lp for lp in loops if lp.vector), None)
    if vector is not None and vector.name.endswith("_vec"):
        base = vector.name[:-4]
        calls.append(Call(at, "vectorize", (base, vector.trips)))
        order.insert(order.index(base) + 1, vector.name)
    elif vector is not None and vector.var in factors:  # a split's inner loop: constant
        calls.append(Call(at, "vectorize", (vector.name,)))
    elif vector is not None:
        # A whole dimension as many points as the lanes at the estimate: its extent is
        # not a constant (a Func computed per tile near an edge, other sizes), so it is
        # split by the lanes, and the outer loop of that split (one trip) stays.
        calls.append(Call(at, "vectorize", (vector.name, vector.trips)))
        order.insert(order.index(vector.name) + 1, f"{vector.name}_vec")
    wanted = []
    for lp in loops:
        wanted += list(lp.fused) if lp.fused else [lp.name]
        if lp.vector and vector.var not in factors and not lp.name.endswith("_vec"):
            wanted.append(f"{lp.name}_vec")
    if wanted != order:
        calls.append(Call(at, "reorder", tuple(wanted)))
    for lp in loops:
        if lp.fused:
            calls.append(Call(at, "fuse", (*lp.fused, lp.name)))
        if lp.unrolled:
            calls.append(Call(at, "unroll", (lp.name,)))
        if lp.parallel:
            calls.append(Call(at, "parallel", (lp.name,)))
    return calls
