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

from halo.autoschedule.algorithm import SERIAL_DIVISIONS, Algorithm, StageModel, extent, union
from halo.autoschedule.loop_nest import FuncNest, decision_of, points, site_box
from halo.autoschedule.space import AT, INLINE, Decision

LINE = 64  # bytes per cache line
# The L3 a core can count on: a server part gives each core a slice of a shared L3
# (Cascade Lake 1.375 MB, Sapphire Rapids 1.875, Zen 3 and 4 4 MB a core), and the
# others use theirs (a VM's neighbours too). With the whole 37.5 MB of a Xeon's L3 as
# its L3, the model took unsharp's full-image intermediates at root for L3-resident
# (1.9-2.2x its hand schedule; with this share, 1.4x).
L3_PER_CORE = 2 << 20
ACCESS_CLASSES = ("broadcast", "dense", "strided", "gather")
LEVELS = ("l1", "l2", "l3", "dram")  # where bytes are read from, nearest first
# Cycles per operation, scalar; a vector instruction does `lanes` of them.
OP_CYCLES = {"Add": 1, "Sub": 1, "Mul": 1, "Min": 1, "Max": 1, "Select": 1, "Cast": 1,
             "Div_float": 4, "Mod_float": 8, "Div_int": 8, "Mod_int": 8, "EQ": 1, "NE": 1,
             "LT": 1, "LE": 1, "And": 1, "Or": 1, "Xor": 1, "Not": 1, "Let": 0}
MATH_CYCLES = 20
# Cycles per point of the operations no vector unit does: an integer division by a
# run-time value, one lane at a time (`x % width` of a wrapping boundary, vectorized 8
# wide on a Zen 3 core: 7 cycles a point against 1 for the copy it guards).
SERIAL_CYCLES = dict.fromkeys(SERIAL_DIVISIONS, 7)
# The cost model's terms, per stage (`cost_terms`).
TERMS = ("compute", "loads", "gathers", "l1_bytes", "l2_bytes", "l3_bytes", "dram_bytes",
         "store_bytes", "heap_allocations", "stack_allocations", "parallel_launches",
         "parallel_tasks", "innermost_loops")


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
    stored_points: int = 0  # points written to memory (a register tile's stay in registers)
    parallel_launches: int = 0  # entries of its own parallel loop (none inside another's)
    serial_cycles: float = 0.0  # per point, of operations each vector lane does alone


def stage_features(alg: Algorithm, decisions: dict[str, Decision],
                   func_nests: dict[str, FuncNest], cores: int, natural_lanes: int,
                   cache_bytes: tuple[int, int, int]) -> list[StageFeatures]:
    """The features of every stage of every Func not inlined; the L3 taken is the
    share of `cores` cores (`L3_PER_CORE`) where that is less than `cache_bytes`'."""
    cache_bytes = (*cache_bytes[:2], min(cache_bytes[2], cores * L3_PER_CORE))
    out = []
    for name, nest in func_nests.items():
        f = alg.funcs[name]
        counts = points(alg, name, nest)
        for s, loops, total in zip(f.stages, nest.loops, counts, strict=True):
            per = total // max(1, nest.realizations)
            ops = _expanded_ops(alg, decisions, s)
            innermost = loops[-1] if loops else None
            lanes = innermost.trips if innermost is not None and innermost.vector else 1
            # points an entry of the innermost loop that runs as a loop covers (a vector
            # or unrolled loop inside it is straight-line code, and one of a single trip
            # is no loop)
            running = [k for k, lp in enumerate(loops)
                       if not (lp.vector or lp.unrolled) and lp.trips > 1]
            per_entry = prod(lp.trips for lp in loops[running[-1]:]) if running else 0
            inner_var = innermost.var if innermost is not None else None
            classes = Counter()
            loads = 0.0
            reg_tile = _register_tile(loops)
            rvar_names = {r[0] for r in s.rvars}
            registers = ceil(prod(reg_tile.values()) / max(1, natural_lanes)) \
                if reg_tile and s.rvars else 0
            spills = registers > (24 if natural_lanes >= 16 else 12)
            # The accumulators of a register tile stay in registers only where LLVM may
            # keep them there: few enough of them, in a buffer halo allocates (an output
            # may alias an input), the tile every point the reduction loops go over.
            # An update's split pure loops get a guarded tail (halo's default for
            # updates) that keeps its tile out of registers.
            names = {name for lp in loops for name in (lp.fused or (lp.name,))}
            guarded = s.index > 0 and any(f"{d}o" in names for d in s.pure)
            under_reduction = len(loops) - 1 - max(
                (k for k, lp in enumerate(loops) if lp.var in rvar_names), default=-1)
            promoted = bool(registers) and not spills and not f.is_output and \
                not guarded and len(_reg_tile_loops(loops)) == under_reduction
            box = alg.stage_box(s, nest.region)
            point = {v: (lo, lo) for v, (lo, _) in box.items()}
            at_point = _reads(alg, decisions, s, point)
            moved = {v: _reads(alg, decisions, s, {**point, v: (lo, lo + 1)})
                     for v, (lo, _) in point.items() if v == inner_var or v in reg_tile}
            loaded = set()
            for k, (a, region) in enumerate(at_point):
                cls = _access_class(a, region, moved[inner_var][k][1]
                                    if inner_var in moved else region,
                                    _stored_extents(alg, func_nests, a))
                if cls == "dense" and lanes > 1 and _folded_across(
                        func_nests.get(a.callee), region[-1][0] - point[inner_var][0], lanes):
                    cls = "gather"
                classes[cls] += 1
                if a.callee == name and promoted or (a.callee, region) in loaded:
                    continue  # the accumulator stays in registers; a value loaded again
                loaded.add((a.callee, region))
                share = prod(trips for v, trips in reg_tile.items()
                             if v in moved and moved[v][k][1] == region)
                loads += {"broadcast": 0.1, "dense": 1.0, "strided": 2 * lanes,
                          "gather": lanes}[cls] / share
            if spills:
                loads += 2.0  # the accumulators spill: a store and a load per point
            tasks = nest.in_parallel * prod(lp.trips for lp in loops if lp.parallel)
            # A parallel loop wakes the thread pool each time it is entered, unless it
            # runs inside another (a team of one); the chunks it hands out cost little.
            first = next((k for k, lp in enumerate(loops) if lp.parallel), None)
            launches = 0 if first is None or nest.in_parallel > 1 else \
                nest.realizations * prod(lp.trips for lp in loops[:first])
            waves = ceil(tasks / cores)
            idle = 1 - tasks / (waves * cores) if tasks > 1 else 1 - 1 / cores
            alloc = prod(nest.allocated) * f.bytes
            read_by_level: Counter = Counter()
            working = lines = 0
            # A sliding window reads, per store realization, what its stored region needs.
            read_box, times = (alg.stage_box(s, nest.store_region), nest.store_realizations) \
                if nest.sliding else (box, nest.realizations)
            footprints = _footprints(alg, decisions, s, read_box)
            for a, region, most in footprints.values():
                working += _bytes_of(alg, a, region)
                lines += _lines(alg, a, region, most)
            # What a realization reads stays in L2 while it runs if it fits; else each
            # iteration of its outermost loop whose reads fit there reads them again
            # from where they live (a tiled loop nest re-reads each tile's inputs).
            depth = 0
            while not nest.sliding and depth < len(loops) and \
                    _line_bytes(alg, footprints) > cache_bytes[1] and \
                    not (loops[depth].vector or loops[depth].unrolled):
                times = nest.realizations * prod(lp.trips for lp in loops[:depth + 1])
                footprints = _footprints(alg, decisions, s,
                                         site_box(alg, name, s.index, nest, depth))
                depth += 1
            # What a Func computed inside the same iteration read just before (gray, then
            # output, reading one tile of unsharp's image) is still in the cache the
            # iteration's reads fit in.
            before = _read_inside(alg, decisions, func_nests, name, s.index, depth - 1)
            iteration = _line_bytes(alg, footprints) + sum(
                _bytes_of(alg, a, region) for a, region in before.values())
            for a, region, most in footprints.values():
                level = _level(_home_bytes(alg, func_nests, a), cache_bytes)
                if a.callee in before and _covers(before[a.callee][1], region):
                    level = min(level, _level(iteration, cache_bytes), key=LEVELS.index)
                read_by_level[level] += _lines(alg, a, region, most) * LINE * times
            full = prod(extent(alg.full_regions[name])) * (
                prod(r[2] for r in s.rvars) if s.rvars else 1)
            out.append(StageFeatures(
                s.label, ops, sum(OP_CYCLES.get(k, MATH_CYCLES if k.startswith("math") else 0)
                                  * v for k, v in ops.items()),
                classes, per, nest.realizations, total, total / max(1, full),
                per_entry, lanes, tasks, idle, alloc,
                nest.store_realizations, working, lines, loads, registers,
                dict(read_by_level), 0 if promoted else total, launches,
                sum(SERIAL_CYCLES.get(k, 0) * v for k, v in ops.items())))
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
            f.points * (f.op_cycles / efficiency + f.serial_cycles) / speedup,
            # (a vector of twice the natural width is two registers: two loads)
            f.points * f.loads_per_vector / max(1, min(f.vector_lanes, natural_lanes)) / speedup,
            f.points * f.access_classes["gather"] / speedup,
            level.get("l1", 0) / speedup, level.get("l2", 0) / speedup,
            level.get("l3", 0) / memory_speedup, level.get("dram", 0) / memory_speedup,
            f.stored_points * 4 / memory_speedup,
            f.allocations if f.allocation_bytes > 65536 else 0,
            f.allocations if f.allocation_bytes <= 65536 else 0,
            f.parallel_launches,
            f.parallel_tasks if f.parallel_tasks > 1 and f.parallel_launches else 0,
            f.points / f.innermost_extent / speedup if f.innermost_extent else 0,
        ])
    return rows


def _inlined(alg: Algorithm, decisions: dict[str, Decision], s: StageModel, a) -> bool:
    g = alg.funcs.get(a.callee)
    return g is not None and not a.is_input and a.callee != s.func and not g.is_output \
        and decision_of(decisions, g.name).placement.kind == INLINE


def _expanded_ops(alg: Algorithm, decisions: dict[str, Decision], s: StageModel) -> Counter:
    """A stage's operations with the inlined Funcs it calls substituted (their
    operations counted once per call)."""
    ops = Counter(s.ops)
    for a in s.accesses:
        if _inlined(alg, decisions, s, a):
            ops.update(_expanded_ops(alg, decisions, alg.funcs[a.callee].stages[0]))
            ops["load_func"] -= 1
    return ops


def _reads(alg: Algorithm, decisions: dict[str, Decision], s: StageModel,
           box: dict[str, tuple[int, int]]) -> list:
    """(access, region read) of every buffer the stage reads while its loop variables
    range over `box`, through the inlined Funcs it calls."""
    out = []
    for a in s.accesses:
        region = alg.region_read(s, a, box)
        if _inlined(alg, decisions, s, a):
            g = alg.funcs[a.callee]
            out += _reads(alg, decisions, g.stages[0], dict(zip(g.dims, region, strict=True)))
        else:
            out.append((a, region))
    return out


def _access_class(a, region, moved, stored: tuple[int, ...] | None) -> str:
    """broadcast (the same point as the innermost loop moves), dense (the next point in
    memory: of the last dimension, or of one whose later dimensions are stored one
    point wide), strided, or gather (not affine)."""
    if any(form is None for form in a.pattern):
        return "gather"
    delta = [m[1] - r[1] for r, m in zip(region, moved, strict=True)]
    if not any(delta):
        return "broadcast"
    if stored is not None and len(stored) == len(delta):
        stride = sum(dk * prod(stored[k + 1:]) for k, dk in enumerate(delta))
        return "dense" if stride == 1 else "strided"
    if delta[-1] == 1 and not any(delta[:-1]):
        return "dense"
    return "strided"


def _folded_across(nest: FuncNest | None, offset: int, lanes: int) -> bool:
    """Whether a vector of `lanes` read `offset` columns from its consumer's own, of a
    buffer that storage folding wraps along its last dimension (a window sliding along
    the row), may wrap: its addresses `% fold` are then no run of memory, and each lane
    loads alone. Priced as dense, unsharp's search slid `ratio` along the row 16
    columns at a time, folded, read at columns -2..2 off: 2.7x its hand schedule, against
    1.5x for what it picks with this (and harris so slid ran 2.5x)."""
    if nest is None:
        return False
    return nest.allocated[-1] < extent(nest.store_region)[-1] and offset % lanes != 0


def _stored_extents(alg: Algorithm, func_nests: dict[str, FuncNest], a
                    ) -> tuple[int, ...] | None:
    """The extents of the buffer an access reads, as stored (None: inlined)."""
    if a.is_input:
        return extent(alg.inputs[a.callee][0])
    nest = func_nests.get(a.callee)
    return extent(nest.store_region) if nest is not None else None


def _reg_tile_loops(loops) -> list:
    """The innermost loops that are unrolled or vectorized (or run once), innermost
    first."""
    inner = []
    for lp in reversed(loops):
        if not (lp.unrolled or lp.vector or lp.trips == 1):
            break
        inner.append(lp)
    return inner


def _register_tile(loops) -> dict:
    """For a stage whose innermost loops are unrolled and vectorized under the reduction
    loops, the number of times each loaded value is reused from registers, by the inner
    loop variables it does not depend on."""
    reuse: dict[str, int] = {}
    for lp in _reg_tile_loops(loops):
        reuse[lp.var] = reuse.get(lp.var, 1) * lp.trips  # a split's loops multiply
    return reuse


def _read_inside(alg: Algorithm, decisions: dict[str, Decision],
                 func_nests: dict[str, FuncNest], func: str, stage: int, loop: int) -> dict:
    """Per buffer, (an access, the union of the regions) that the Funcs computed inside
    one iteration of loop `loop` of `func`'s stage (at it or at a loop inside it; inside
    the stage's realization where `loop` is -1) read there, over their first
    realization."""
    out: dict = {}
    for g, decision in decisions.items():
        p = decision.placement
        if p.kind != AT or p.consumer != func or p.stage != stage or p.loop < loop or \
                g not in func_nests:
            continue
        for gs in alg.funcs[g].stages:
            box = alg.stage_box(gs, func_nests[g].region)
            for a, region, _ in _footprints(alg, decisions, gs, box).values():
                _, old = out.get(a.callee, (a, None))
                out[a.callee] = (a, union(old, region))
    return out


def _covers(outer, inner) -> bool:
    """Whether region `outer` holds region `inner` (boxes of (lo, hi) per dimension)."""
    return outer is not None and inner is not None and len(outer) == len(inner) and all(
        lo <= ilo and ihi <= hi for (lo, hi), (ilo, ihi) in zip(outer, inner, strict=True))


def _footprints(alg: Algorithm, decisions: dict[str, Decision], s: StageModel,
                box: dict[str, tuple[int, int]]) -> dict:
    """Per buffer the stage reads over `box`: (an access, the union of its taps' regions,
    the most cache lines they span). An affine tap's region is exact; one through a
    clamp, a mirror or a wrap is its whole range once a tile reaches an edge, though each
    point still reads one element: its lines are at most those `box`'s rows span."""
    row = next((hi - lo + 1 for v, (lo, hi) in reversed(box.items()) if v in s.pure), 1)
    rows = prod(hi - lo + 1 for lo, hi in box.values()) // row
    out: dict = {}
    for a, region in _reads(alg, decisions, s, box):
        _, old, most = out.get(a.callee, (a, None, 0))
        most += _lines(alg, a, region) if None not in a.affine else \
            rows * (ceil(row * _elem_bytes(alg, a) / LINE) + 1)
        out[a.callee] = (a, union(old, region), most)
    return out


def _lines(alg: Algorithm, a, region, most: int | None = None) -> int:
    """Cache lines a region of the buffer `a` reads spans (rows of its last dimension),
    at most `most`."""
    rows = prod(extent(region)[:-1]) if region else 1
    lines = rows * ceil((extent(region)[-1] if region else 1) * _elem_bytes(alg, a) / LINE)
    return lines if most is None else min(lines, most)


def _line_bytes(alg: Algorithm, footprints: dict) -> int:
    return sum(_lines(alg, *footprint) for footprint in footprints.values()) * LINE


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
    return prod(nest.allocated) * alg.funcs[a.callee].bytes


def _level(size: int, cache_bytes: tuple[int, int, int]) -> str:
    l1, l2, l3 = cache_bytes
    return "l1" if size <= l1 else "l2" if size <= l2 else "l3" if size <= l3 else "dram"
