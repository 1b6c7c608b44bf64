"""Illegal GPU schedules: a legal random GPU schedule followed by one call that breaks a
rule of GPU schedules, which halo must refuse with a `HaloError` before any launch.

`ILLEGAL_GPU_CALLS` has one entry per rule, each a function that draws a call breaking it
for the pipeline as scheduled so far (or None where it can't). The rules that need a
stage without GPU bindings (`UNBOUND_RULES`) are drawn on a schedule that leaves the
output's first stage unbound.
"""
from __future__ import annotations

import random
from collections.abc import Callable

from halo.ir.nodes import ForKind
from halo.random_programs.pipeline_spec import BuiltPipeline, RandomPipeline
from halo.random_programs.random_gpu_schedule import (
    BLOCK,
    KERNEL,
    THREAD,
    GpuDrawer,
    gpu_schedule_drawer,
)
from halo.schedule.calls import Call, StageRef

# A rule's calls: the illegal one last, after any it needs to make its point.
Rule = Callable[[GpuDrawer, random.Random], Call | list[Call] | None]


def _pure_loops(d: GpuDrawer, ref: StageRef, kind: ForKind = ForKind.SERIAL) -> list[str]:
    return [x.name for x in d.built.funcs[ref.func].schedule.stages[ref.stage].dims
            if x.pure and x.kind is kind]


def _at_level(d: GpuDrawer, level: str) -> list[str]:
    return sorted(name for name, lv in d.levels.items() if lv == level and
                  name in d.built.funcs and name != d.unbound)


# ----------------------------------------------- on the output, left without bindings


def no_gpu_binding(d: GpuDrawer, rng: random.Random) -> Call | None:
    """A root stage that binds no loop (it would run on the host)."""
    ref = StageRef(d.unbound)
    return Call(ref, "split", (_pure_loops(d, ref)[-1], "bad_o", "bad_i", rng.choice((2, 4))))


def threads_without_blocks(d: GpuDrawer, rng: random.Random) -> Call | None:
    """Thread loops with no block loop around them."""
    return Call(StageRef(d.unbound), "gpu_threads", (_pure_loops(d, StageRef(d.unbound))[-1],))


def too_many_threads(d: GpuDrawer, rng: random.Random) -> Call | None:
    """A block of more than 1024 threads."""
    loops = _pure_loops(d, StageRef(d.unbound))
    if len(loops) >= 2 and rng.random() < 0.5:
        y, x = loops[-2:]
        return Call(StageRef(d.unbound), "gpu_tile",
                    (y, x, "bad_yo", "bad_xo", "bad_yi", "bad_xi", rng.choice((33, 64)), 32),
                    (("tail", "guard"),))
    return Call(StageRef(d.unbound), "gpu_tile", (loops[-1], "bad_o", "bad_i",
                                                   rng.choice((1025, 2048))))


UNBOUND_RULES: dict[str, Rule] = {
    "no_gpu_binding": no_gpu_binding,
    "threads_without_blocks": threads_without_blocks,
    "too_many_threads": too_many_threads,
}


# ----------------------------------------------------------- on a legal GPU schedule


def _bind_a_pure_loop(d: GpuDrawer, rng: random.Random, names: list[str],
                      method: str) -> Call | None:
    """`method` (a binding) on a pure loop of one of the Funcs `names`."""
    options = [(name, loop) for name in names for loop in _pure_loops(d, StageRef(name))]
    if not options:
        return None
    name, loop = rng.choice(options)
    return Call(StageRef(name), method, (loop,))


def blocks_inside_kernel(d: GpuDrawer, rng: random.Random) -> Call | None:
    """Block loops of a Func computed inside another stage's kernel."""
    return _bind_a_pure_loop(d, rng, _at_level(d, BLOCK) + _at_level(d, THREAD), "gpu_blocks")


def threads_inside_threads(d: GpuDrawer, rng: random.Random) -> Call | None:
    """Thread loops of a Func computed inside another stage's thread loops."""
    return _bind_a_pure_loop(d, rng, _at_level(d, THREAD), "gpu_threads")


def vthread_inside_threads(d: GpuDrawer, rng: random.Random) -> Call | None:
    """A vthread loop inside thread loops."""
    return _bind_a_pure_loop(d, rng, _at_level(d, THREAD), "vthread")


def bind_reduction_loop(d: GpuDrawer, rng: random.Random) -> Call | None:
    """A reduction loop bound without atomic(): to threads, a race where the update isn't
    associative (where it is, a warp reduction); to blocks, a race always."""
    options = []
    for name in _at_level(d, KERNEL) + _at_level(d, BLOCK):
        f = d.built.funcs[name]
        for k, stage in enumerate(f.schedule.stages):
            if k > 0 and not stage.atomic and not stage.allow_races:
                points = f.update(k - 1)._warp_point_loops()
                options += [(StageRef(name, k), x.name, "gpu_threads" if points is None or
                             x.name in points else "gpu_blocks") for x in stage.dims
                            if not x.pure and x.kind is ForKind.SERIAL]
    if not options:
        return None
    ref, loop, bind = rng.choice(options)
    return Call(ref, bind, (loop,))


def store_in_wrong_memory(d: GpuDrawer, rng: random.Random) -> Call | None:
    """A memory the Func's level can't have: shared memory at root or inside threads,
    registers at root, device memory at block level or inside threads."""
    wrong = {KERNEL: ("shared", "local"), BLOCK: ("global",),
             THREAD: ("shared", "global")}
    options = [(name, scope) for level, scopes in wrong.items()
               for name in _at_level(d, level) if name != d.pipeline.output.name
               for scope in scopes]
    if not options:
        return None
    name, scope = rng.choice(options)
    return Call(StageRef(name), "store_in", (scope,))


def shared_memory_overflow(d: GpuDrawer, rng: random.Random) -> list[Call] | None:
    """A Func in shared memory bounded to more than a block may hold (227 KB on sm_90,
    the most of any architecture): its last dimension to 2^20 points, after its others
    to one point each, so its region is not empty (a consumer's RDom whose `where`
    holds nowhere reads none of it)."""
    options = [name for name in _at_level(d, BLOCK)
               if d.built.funcs[name].args and d.built.funcs[name].schedule.stages[0].dims]
    if not options:
        return None
    name = rng.choice(options)
    *others, x = (a.name for a in d.built.funcs[name].args)
    return [*(Call(StageRef(name), "bound", (v, 0, 1)) for v in others),
            Call(StageRef(name), "bound", (x, -(1 << 19), 1 << 20))]


def rebind_bound_loop(d: GpuDrawer, rng: random.Random) -> Call | None:
    """A loop bound to threads bound to blocks too, or the other way round."""
    ref = StageRef(d.pipeline.output.name)
    dims = d.built.funcs[ref.func].schedule.stages[0].dims
    bound = [x for x in dims if x.kind in (ForKind.GPU_BLOCK, ForKind.GPU_THREAD)]
    if not bound:
        return None
    x = rng.choice(bound)
    return Call(ref, "gpu_threads" if x.kind is ForKind.GPU_BLOCK else "gpu_blocks",
                (x.name,))


BOUND_RULES: dict[str, Rule] = {  # (those that apply least often first)
    "threads_inside_threads": threads_inside_threads,
    "vthread_inside_threads": vthread_inside_threads,
    "bind_reduction_loop": bind_reduction_loop,
    "shared_memory_overflow": shared_memory_overflow,
    "blocks_inside_kernel": blocks_inside_kernel,
    "store_in_wrong_memory": store_in_wrong_memory,
    "rebind_bound_loop": rebind_bound_loop,
}
ILLEGAL_GPU_CALLS: dict[str, Rule] = {**UNBOUND_RULES, **BOUND_RULES}


def _as_list(calls: Call | list[Call]) -> list[Call]:
    return calls if isinstance(calls, list) else [calls]


def illegal_gpu_schedule(pipeline: RandomPipeline, built: BuiltPipeline,
                         seed: int) -> tuple[list[Call], str]:
    """A legal GPU schedule (applied to `built`) plus the calls of a rule, the last of them
    illegal (not applied), and the name of the rule."""
    rng = random.Random(seed)
    rule = rng.choice(list(ILLEGAL_GPU_CALLS))
    unbound = pipeline.output.name if rule in UNBOUND_RULES else None
    drawer = gpu_schedule_drawer(pipeline, built, seed, unbound=unbound)
    legal = list(drawer.calls)
    if rule in UNBOUND_RULES:
        return legal + _as_list(UNBOUND_RULES[rule](drawer, rng)), rule
    # the drawn rule, else the others, those that apply least often first (the table's
    # order; rebind_bound_loop, last, applies to every schedule)
    for name in [rule, *BOUND_RULES]:
        calls = BOUND_RULES[name](drawer, rng)
        if calls is not None:
            return legal + _as_list(calls), name
    raise AssertionError("rebind_bound_loop applies to every legal GPU schedule")
