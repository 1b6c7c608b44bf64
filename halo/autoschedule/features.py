"""Features of a candidate schedule, per stage, computed from the Func graph and the
candidate's loop nest (`loop_nest.nests`) without lowering; docs/autoschedule.md has the
table.

Algorithm features come from the definitions: the operation histogram (inlined Funcs'
operations counted at each call of them) and, per access, its class from the Jacobian of
its arguments with respect to the innermost loop (`ACCESS_CLASSES`). Schedule features
come from the nest: points computed per realization and in total, the recompute over the
points the outputs need, bytes allocated and where, the working set and unique cache
lines read per realization, the innermost loop, vector lanes, parallel tasks and the
cores a last wave leaves idle. `cost_terms` folds them into the per-stage terms a cost
model weighs.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from math import ceil, prod

import numpy as np

from halo.autoschedule.algorithm import Algorithm, StageModel, extent
from halo.autoschedule.loop_nest import FuncNest, decision_of, points
from halo.autoschedule.space import INLINE, Decision

LINE = 64  # bytes per cache line
ACCESS_CLASSES = ("broadcast", "dense", "strided", "gather")
# Cycles per operation, scalar; a vector instruction does `lanes` of them.
OP_CYCLES = {"Add": 1, "Sub": 1, "Mul": 1, "Min": 1, "Max": 1, "Select": 1, "Cast": 1,
             "Div_float": 4, "Mod_float": 8, "Div_int": 8, "Mod_int": 8, "EQ": 1, "NE": 1,
             "LT": 1, "LE": 1, "And": 1, "Or": 1, "Xor": 1, "Not": 1, "Let": 0}
MATH_CYCLES = 20
# The cost model's terms, per stage (`cost_terms`).
TERMS = ("compute", "loads", "gathers", "l1_bytes", "l2_bytes", "l3_bytes", "dram_bytes",
         "store_bytes", "heap_allocations", "stack_allocations", "parallel_tasks",
         "innermost_loops")


@dataclass
class StageFeatures:
    """One stage of a Func computed (not inlined) under a candidate schedule."""
    label: str
    ops: Counter
    op_cycles: float
    access_classes: Counter
    points_per_realization: int
    realizations: int
    points: int
    recompute: float
    innermost_extent: int
    vector_lanes: int
    parallel_tasks: int
    idle_core_fraction: float
    allocation_bytes: int
    allocations: int
    working_set_bytes: int
    unique_lines: int
    loads_per_vector: float
    accumulator_registers: int
    bytes_read_by_level: dict[str, float] = field(default_factory=dict)


def stage_features(alg: Algorithm, decisions: dict[str, Decision],
                   func_nests: dict[str, FuncNest], cores: int, natural_lanes: int,
                   cache_bytes: tuple[int, int, int]) -> list[StageFeatures]:
    """The features of every stage of every Func not inlined."""
    out = []
    for name, nest in func_nests.items():
        f = alg.funcs[name]
        counts = points(alg, name, nest)
        for s, loops, total in zip(f.stages, nest.loops, counts, strict=True):
            per = total // max(1, nest.realizations)
            ops, accesses = _expanded(alg, decisions, s)
            innermost = loops[-1] if loops else None
            lanes = innermost.trips if innermost is not None and innermost.vector else 1
            inner_var = innermost.var if innermost is not None else None
            classes = Counter()
            loads = 0.0
            reg_tile = _register_tile(loops)
            for st, a in accesses:
                cls = _access_class(st, a, inner_var)
                classes[cls] += 1
                if a.callee == name and reg_tile:
                    continue  # the accumulator stays in registers
                share = _reuse(st, a, reg_tile)
                loads += {"broadcast": 0.1, "dense": 1.0, "strided": lanes,
                          "gather": lanes}[cls] / share
            registers = prod(reg_tile.values()) // max(1, lanes) if reg_tile and \
                s.rvars else 0
            if registers > (24 if natural_lanes >= 16 else 12):
                loads += 2.0  # the accumulators spill: a store and a load per point
            tasks = nest.in_parallel * prod(lp.trips for lp in loops if lp.parallel)
            waves = ceil(tasks / cores)
            idle = 1 - tasks / (waves * cores) if tasks > 1 else 1 - 1 / cores
            alloc = prod(extent(nest.store_region)) * f.bytes
            box = alg.stage_box(s, nest.region)
            read_by_level: Counter = Counter()
            working = lines = 0
            for a in s.accesses:
                region = alg.region_read(s, a, box)
                size = _bytes_of(alg, a, region)
                rows = prod(extent(region)[:-1]) if region else 1
                row_bytes = (extent(region)[-1] if region else 1) * _elem_bytes(alg, a)
                working += size
                lines += rows * ceil(row_bytes / LINE)
                home = _home_bytes(alg, func_nests, a)
                level = _level(home, cache_bytes)
                read_by_level[level] += size * nest.realizations
            full = prod(extent(alg.full_regions[name])) * (
                prod(r[2] for r in s.rvars) if s.rvars else 1)
            out.append(StageFeatures(
                s.label, ops, sum(OP_CYCLES.get(k, MATH_CYCLES if k.startswith("math") else 0)
                                  * v for k, v in ops.items()),
                classes, per, nest.realizations, total, total / max(1, full),
                innermost.trips if innermost is not None else 1, lanes, tasks, idle, alloc,
                nest.store_realizations, working, lines, loads, registers,
                dict(read_by_level)))
    return out


def cost_terms(features: list[StageFeatures], cores: int, natural_lanes: int) -> np.ndarray:
    """The per-pipeline sum of each stage's terms (`TERMS`), each already divided by the
    speedup its parallel loop gives."""
    rows = np.zeros(len(TERMS))
    for f in features:
        speedup = f.parallel_tasks / ceil(f.parallel_tasks / cores) if f.parallel_tasks > 1 \
            else 1.0
        efficiency = min(f.vector_lanes, 2 * natural_lanes) if f.vector_lanes > 1 else 1
        if f.vector_lanes > natural_lanes:
            efficiency = natural_lanes * 1.15  # two registers: more in flight, not wider
        level = f.bytes_read_by_level
        memory_speedup = min(speedup, 2.0)
        rows += np.array([
            f.points * f.op_cycles / efficiency / speedup,
            f.points * f.loads_per_vector / max(1, f.vector_lanes) / speedup,
            f.points * f.access_classes["gather"] / speedup,
            level.get("l1", 0) / speedup, level.get("l2", 0) / speedup,
            level.get("l3", 0) / memory_speedup, level.get("dram", 0) / memory_speedup,
            f.points * 4 / memory_speedup,
            f.allocations if f.allocation_bytes > 65536 else 0,
            f.allocations if f.allocation_bytes <= 65536 else 0,
            f.parallel_tasks if f.parallel_tasks > 1 else 0,
            f.points / max(1, f.innermost_extent) / speedup,
        ])
    return rows


def _expanded(alg: Algorithm, decisions: dict[str, Decision], s: StageModel
              ) -> tuple[Counter, list]:
    """A stage's operations and accesses with the inlined Funcs it calls substituted
    (their operations counted once per call)."""
    ops = Counter(s.ops)
    accesses = []
    for a in s.accesses:
        g = alg.funcs.get(a.callee)
        if g is not None and not a.is_input and a.callee != s.func and \
                decision_of(decisions, g.name).placement.kind == INLINE and not g.is_output:
            inner_ops, inner_accesses = _expanded(alg, decisions, g.stages[0])
            ops.update(inner_ops)
            ops["load_func"] -= 1
            accesses += inner_accesses
        else:
            accesses.append((s, a))
    return ops, accesses


def _access_class(s: StageModel, a, inner_var: str | None) -> str:
    """broadcast (invariant in the innermost loop), dense (stride 1 in the last
    dimension), strided, or gather (not affine)."""
    if inner_var is None or inner_var not in s.loop_vars:
        return "broadcast"
    k = s.loop_vars.index(inner_var)
    column = []
    for form in a.pattern:
        if form is None:
            return "gather"
        column.append(form[0][k])
    if not any(column):
        return "broadcast"
    if column[-1] == 1 and not any(column[:-1]):
        return "dense"
    return "strided"


def _register_tile(loops) -> dict:
    """For a stage whose innermost loops are unrolled and vectorized under the reduction
    loops, the number of times each loaded value is reused from registers, by the inner
    loop variables it does not depend on."""
    inner = []
    for lp in reversed(loops):
        if not (lp.unrolled or lp.vector):
            break
        inner.append(lp)
    return {lp.var: lp.trips for lp in inner} if inner else {}


def _reuse(s: StageModel, a, reg_tile: dict) -> int:
    """How many unrolled or vector iterations share one load of `a` (those of the loop
    variables it doesn't depend on)."""
    share = 1
    for var, trips in reg_tile.items():
        if var in s.loop_vars:
            k = s.loop_vars.index(var)
            if all(form is not None and not form[0][k] for form in a.affine):
                share *= trips
    return share


def _elem_bytes(alg: Algorithm, a) -> int:
    return alg.inputs[a.callee][1] if a.is_input else alg.funcs[a.callee].bytes


def _bytes_of(alg: Algorithm, a, region) -> int:
    return prod(extent(region)) * _elem_bytes(alg, a) if region else _elem_bytes(alg, a)


def _home_bytes(alg: Algorithm, func_nests: dict[str, FuncNest], a) -> int:
    """The size of the buffer an access reads: its allocation per realization (an
    inlined Func's values are computed in registers)."""
    if a.is_input:
        box, size = alg.inputs[a.callee]
        return prod(extent(box)) * size
    nest = func_nests.get(a.callee)
    if nest is None:
        return 0
    return prod(extent(nest.store_region)) * alg.funcs[a.callee].bytes


def _level(size: int, cache_bytes: tuple[int, int, int]) -> str:
    l1, l2, l3 = cache_bytes
    return "l1" if size <= l1 else "l2" if size <= l2 else "l3" if size <= l3 else "dram"
