"""Illegal schedules: a legal random schedule followed by one call that breaks a rule.

`ILLEGAL_CALLS` is a table with one entry per rule, each a function that draws a call
breaking it for the pipeline as scheduled so far (or None where it can't). halo must
answer every one with a `HaloError`, when the call is made or when the pipeline is
compiled or run; anything else (running, a crash, an `InternalError`) is a bug.
"""
from __future__ import annotations

import random
from collections.abc import Callable

from halo.ir import nodes as n
from halo.ir.substitute import var_names
from halo.ir.visitor import walk
from halo.random_programs.pipeline_spec import BuiltPipeline, RandomPipeline
from halo.random_programs.random_schedule import (
    Drawer,
    Placer,
    predicted_cache_name,
    random_schedule,
)
from halo.schedule.calls import Call, StageRef
from halo.schedule.records import Split


def _scheduled(d: Drawer, placer: Placer, rng: random.Random, updates: bool = False):
    """A random (Func, stage) that has its own loops (not inlined)."""
    refs = [StageRef(s.name, k) for s in d.pipeline.stages
            if placer.placement(s.name) != "inline"
            for k in range(len(d.built.funcs[s.name].definitions)) if k > 0 or not updates]
    return rng.choice(refs) if refs else None


def _dims(d: Drawer, ref: StageRef):
    return d.built.funcs[ref.func].schedule.stages[ref.stage].dims


def split_missing_loop(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    return ref and Call(ref, "split", ("nosuchloop", "a_o", "a_i", 4))


def split_bad_factor(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    return ref and Call(ref, "split", (_dims(d, ref)[0].name, "bad_o", "bad_i",
                                       rng.choice((0, -2, 2.5))))


def split_bad_tail(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    return ref and Call(ref, "split", (_dims(d, ref)[-1].name, "bad_o", "bad_i", 3),
                        (("tail", "wrap"),))


def split_tail_on_update(d, placer, rng):
    ref = _scheduled(d, placer, rng, updates=True)
    tail = rng.choice(("shift_inwards", "round_up"))
    return ref and Call(ref, "split", (_dims(d, ref)[-1].name, "bad_o", "bad_i", 3),
                        (("tail", tail),))


def split_reused_name(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    if ref is None or len(_dims(d, ref)) < 2:
        return None
    a, b = _dims(d, ref)[0].name, _dims(d, ref)[1].name
    return Call(ref, "split", (a, "bad_o", b, 2))


def split_reserved_name(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    return ref and Call(ref, "split", (_dims(d, ref)[0].name, "bad_o",
                                       rng.choice(("min", "max", "extent")), 2))


def fuse_not_adjacent(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    if ref is None or len(_dims(d, ref)) < 2:
        return None
    dims = _dims(d, ref)
    return Call(ref, "fuse", (dims[-1].name, dims[0].name, "bad_f"))


def reorder_duplicate(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    name = ref and rng.choice(_dims(d, ref)).name
    return ref and Call(ref, "reorder", (name, name))


def reorder_rvars(d, placer, rng):
    """Swap two reduction loops of a reduction into one point (the update's left side
    is its pure Vars), both loops of two or more iterations: the order of the updates
    changes, and no dependence analysis can prove that harmless (unless the user opted
    in to any order with atomic() or allow_race_conditions())."""
    candidates = []
    for s in d.pipeline.stages:
        f = d.built.funcs[s.name]
        for k in range(1, len(f.definitions)):
            rdom = f.definitions[k].rdom
            pure = all(getattr(a, "name", None) in {v.name for v in f.args}
                       for a in f.definitions[k].args)
            if (rdom is None or not pure or placer.placement(s.name) == "inline"
                    or _races_permitted(d, StageRef(s.name, k))):
                continue
            if f.update(k - 1)._order_free():  # any order gives the same result
                continue
            names = {x.name for x in _dims(d, StageRef(s.name, k))}
            wide = [rv.name for rv, (_, ext) in zip(rdom.rvars, rdom.bounds, strict=True)
                    if rv.name in names and getattr(ext.node, "value", 0) >= 2]
            if len(wide) >= 2:
                candidates.append((StageRef(s.name, k), wide))
    if not candidates:
        return None
    ref, wide = rng.choice(candidates)
    return Call(ref, "reorder", (wide[-1], wide[0]))


def _races_permitted(d, ref: StageRef) -> bool:
    """The user opted in to any order of the stage's updates: atomic() or
    allow_race_conditions()."""
    record = d.built.funcs[ref.func].schedule.stages[ref.stage]
    return record.atomic or record.allow_races


def _scatters(d, ref: StageRef) -> bool:
    """Whether the update's left side indexes its reduction variables directly (a
    scatter, `s[r.y, r.x // 2] += ...`): the race check may then prove that a reduction
    loop's iterations write different points, which makes running it in parallel legal."""
    definition = d.built.funcs[ref.func].definitions[ref.stage]
    rvars = {rv.name for rv in definition.rdom.rvars} if definition.rdom else set()
    return any(var_names(a) & rvars and not any(isinstance(c, n.Call) for c in walk(a))
               for a in definition.args)


def parallel_rvar(d, placer, rng):
    candidates = [(StageRef(s.name, k), x.name) for s in d.pipeline.stages
                  if placer.placement(s.name) != "inline"
                  for k in range(1, len(d.built.funcs[s.name].definitions))
                  if not _races_permitted(d, StageRef(s.name, k))
                  and not _scatters(d, StageRef(s.name, k))
                  for x in _dims(d, StageRef(s.name, k)) if not x.pure]
    if not candidates:
        return None
    ref, name = rng.choice(candidates)
    return Call(ref, rng.choice(("parallel", "vectorize")), (name,))


def compute_at_self(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    if ref is None or ref.func == d.pipeline.output.name:
        return None
    return Call(StageRef(ref.func), "compute_at", (StageRef(ref.func), _dims(d, ref)[0].name))


def compute_at_non_consumer(d, placer, rng):
    """compute_at a loop of a Func that reads f neither directly nor through others: no
    loop of it encloses a use of f."""
    names = [s.name for s in d.pipeline.stages[:-1]]
    if not names:
        return None
    f = rng.choice(names)
    users, todo = set(), [f]
    while todo:
        for g in placer.env.consumers(todo.pop()):
            if g not in users:
                users.add(g)
                todo.append(g)
    sites = {(r, v) for r, v, _ in placer.sites(f)}
    options = [(StageRef(g.name, k), x.name) for g in d.pipeline.stages if g.name != f
               and g.name not in users and placer.placement(g.name) != "inline"
               for k in range(len(d.built.funcs[g.name].definitions))
               for x in _dims(d, StageRef(g.name, k))
               if (StageRef(g.name, k), x.name) not in sites]
    if not options:
        return None
    return Call(StageRef(f), "compute_at", rng.choice(options))


def compute_at_missing_loop(d, placer, rng):
    names = [s.name for s in d.pipeline.stages[:-1]]
    if not names:
        return None
    return Call(StageRef(rng.choice(names)), "compute_at",
                (StageRef(d.pipeline.output.name), "nosuchloop"))


def inline_with_updates(d, placer, rng):
    names = [s.name for s in d.pipeline.stages[:-1]
             if len(d.built.funcs[s.name].definitions) > 1]
    return names and Call(StageRef(rng.choice(names)), "compute_inline") or None


def place_output(d, placer, rng):
    out = StageRef(d.pipeline.output.name)
    others = [s.name for s in d.pipeline.stages[:-1] if placer.placement(s.name) != "inline"]
    if others and rng.random() < 0.5:
        g = StageRef(rng.choice(others))
        return Call(out, "compute_at", (g, _dims(d, g)[0].name))
    return Call(out, "compute_inline")


def store_inside_compute(d, placer, rng):
    """Storage inside the loop the Func is computed at (or anywhere, for a root Func)."""
    options = []
    for s in d.pipeline.stages[:-1]:
        where = placer.placement(s.name)
        if where == "root":
            out = StageRef(d.pipeline.output.name)
            options.append((s.name, out, _dims(d, out)[-1].name))
        elif isinstance(where, tuple):
            ref, var = where
            names = [x.name for x in _dims(d, ref)]
            options += [(s.name, ref, v) for v in names[names.index(var) + 1:]]
    if not options:
        return None
    name, ref, var = rng.choice(options)
    return Call(StageRef(name), "store_at", (ref, var))


def store_in_bad_scope(d, placer, rng):
    ref = _scheduled(d, placer, rng)
    return ref and Call(StageRef(ref.func), "store_in", (rng.choice(("heap", "texture")),))


def bound_missing_dim(d, placer, rng):
    return Call(StageRef(d.pipeline.output.name), "bound", ("nosuchdim", 0, 4))


def loops_on_inlined(d, placer, rng):
    names = [s.name for s in d.pipeline.stages[:-1] if placer.placement(s.name) == "inline"]
    if not names:
        return None
    name = rng.choice(names)
    var = d.built.funcs[name].args[-1].name
    if rng.random() < 0.5:
        return Call(StageRef(name), "split", (var, "bad_o", "bad_i", 2))
    return Call(StageRef(name), rng.choice(("vectorize", "parallel")), (var,))


def _output_original_dims(d):
    """The output's dimensions that are still its own, unsplit loops (a split may reuse
    the name for its outer loop), with their extents."""
    out = d.built.output
    stage = out.schedule.stages[0]
    if stage.specializations:  # (the default loops may not be the ones that run)
        return []
    split = {t.old for t in stage.transforms if isinstance(t, Split)}
    names = set(stage.dim_names()) - split
    return [(v.name, size) for v, size in zip(out.args, d.pipeline.output_shape, strict=True)
            if v.name in names and v.name not in out.schedule.bounds]


def vectorize_variable_extent(d, placer, rng):
    """vectorize/unroll need a constant extent; the output's own extents are not."""
    dims = _output_original_dims(d)
    if not dims:
        return None
    return Call(StageRef(d.pipeline.output.name), rng.choice(("vectorize", "unroll")),
                (rng.choice(dims)[0],))


def round_up_output(d, placer, rng):
    dims = _output_original_dims(d)
    if not dims:
        return None
    name, size = rng.choice(dims)
    return Call(StageRef(d.pipeline.output.name), "split", (name, "bad_o", "bad_i", size + 1),
                (("tail", "round_up"),))


def bound_too_small(d, placer, rng):
    out = d.built.output
    dims = [(v.name, lo, s) for v, lo, s in zip(out.args, d.pipeline.output_origin,
                                                d.pipeline.output_shape, strict=True)
            if s >= 2 and v.name not in out.schedule.bounds]
    if not dims:
        return None
    name, lo, size = rng.choice(dims)
    return Call(StageRef(out.name), "bound", (name, lo, size - 1))


# name -> draw(drawer, placer, rng) -> Call | None
ILLEGAL_CALLS: dict[str, Callable] = {
    "split_missing_loop": split_missing_loop,
    "split_bad_factor": split_bad_factor,
    "split_bad_tail": split_bad_tail,
    "split_tail_on_update": split_tail_on_update,
    "split_reused_name": split_reused_name,
    "split_reserved_name": split_reserved_name,
    "fuse_not_adjacent": fuse_not_adjacent,
    "reorder_duplicate": reorder_duplicate,
    "reorder_rvars": reorder_rvars,
    "parallel_rvar": parallel_rvar,
    "compute_at_self": compute_at_self,
    "compute_at_non_consumer": compute_at_non_consumer,
    "compute_at_missing_loop": compute_at_missing_loop,
    "inline_with_updates": inline_with_updates,
    "place_output": place_output,
    "store_inside_compute": store_inside_compute,
    "store_in_bad_scope": store_in_bad_scope,
    "bound_missing_dim": bound_missing_dim,
    "loops_on_inlined": loops_on_inlined,
    "vectorize_variable_extent": vectorize_variable_extent,
    "round_up_output": round_up_output,
    "bound_too_small": bound_too_small,
}


def _updates_of_kind(d, placer, kinds):
    return [StageRef(s.name, k) for s in d.pipeline.stages if s.kind in kinds
            and placer.placement(s.name) != "inline" and s.name in d.built.funcs
            for k in range(1, len(d.built.funcs[s.name].definitions))]


def rfactor_not_associative(d, placer, rng):
    """rfactor of a scan (it reads its Func at another point): no intermediate can
    hold partial results."""
    refs = _updates_of_kind(d, placer, ("scan",))
    if not refs:
        return None
    ref = rng.choice(refs)
    rloops = [x.name for x in _dims(d, ref) if not x.pure]
    return rloops and Call(ref, "rfactor", (rng.choice(rloops), "u_bad")) or None


def atomic_not_pointwise(d, placer, rng):
    """atomic() on a scan: it reads its Func at a point it doesn't write."""
    refs = _updates_of_kind(d, placer, ("scan",))
    return refs and Call(rng.choice(refs), "atomic") or None


def cache_read_non_reader(d, placer, rng):
    """cache_read naming a reader that doesn't read the source."""
    env = placer.env
    options = []
    for s in d.pipeline.stages:
        src = d.built.funcs[s.name]
        readers = {g.name for g in env.funcs.values() if g is not src
                   and any(src in x.deps for x in g.definitions)}
        options += [(s.name, g.name) for g in d.pipeline.stages
                    if g.name not in readers and g.name != s.name]
    if not options:
        return None
    src, g = rng.choice(options)
    source = d.built.funcs[src]
    return Call(StageRef(src), "cache_read", ("global",), (("readers", (StageRef(g),)),),
                result=predicted_cache_name(source, "global"))


def cache_write_after_loops(d, placer, rng):
    """cache_write of a Func whose loops are already scheduled."""
    names = [s.name for s in d.pipeline.stages if s.name in d.built.funcs
             and placer.placement(s.name) != "inline"
             and any(st.transforms for st in d.built.funcs[s.name].schedule.stages)]
    if not names:
        return None
    name = rng.choice(names)
    return Call(StageRef(name), "cache_write", ("global",),
                result=predicted_cache_name(d.built.funcs[name], "global"))


def specialize_on_loop_var(d, placer, rng):
    """A specialization whose condition uses a pure Var (not known before the run)."""
    ref = _scheduled(d, placer, rng)
    if ref is None:
        return None
    cond = rng.choice(("x > 2", "y % 2 == 0"))
    return Call(StageRef(ref.func, ref.stage, cond), "serial", (_dims(d, ref)[0].name,))


ILLEGAL_CALLS.update({
    "rfactor_not_associative": rfactor_not_associative,
    "atomic_not_pointwise": atomic_not_pointwise,
    "cache_read_non_reader": cache_read_non_reader,
    "cache_write_after_loops": cache_write_after_loops,
    "specialize_on_loop_var": specialize_on_loop_var,
})


def illegal_schedule(pipeline: RandomPipeline, built: BuiltPipeline,
                     seed: int) -> tuple[list[Call], str]:
    """A legal schedule (applied to `built`) plus one illegal call (not applied), and
    the name of the rule it breaks."""
    rng = random.Random(seed)
    legal = random_schedule(pipeline, built, seed)
    drawer = Drawer(rng, pipeline, built, list(legal))
    placer = Placer(drawer)
    placer.d.placements = _placements(legal, pipeline)
    names = list(ILLEGAL_CALLS)
    for _ in range(50):
        rule = rng.choice(names)
        call = ILLEGAL_CALLS[rule](drawer, placer, rng)
        if call:
            return legal + [call], rule
    return legal + [bound_missing_dim(drawer, placer, rng)], "bound_missing_dim"


def _placements(calls: list[Call], pipeline: RandomPipeline) -> dict:
    out: dict = {}
    for c in calls:
        if c.method == "compute_root":
            out[c.target.func] = "root"
        elif c.method == "compute_inline":
            out[c.target.func] = "inline"
        elif c.method == "compute_at":
            out[c.target.func] = (c.args[0], c.args[1])
    return out
