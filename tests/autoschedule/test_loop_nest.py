"""The loop-nest model against the compiler: the points each Func computes must equal
`Target(count_stores=True)`'s exact counts, and each allocation's extents the ones
bounds inference writes (its first realization, with whole tiles where the sizes have
them), on apps and on random pipelines under random states of the search."""
from __future__ import annotations

import random

import numpy as np
import pytest

import halo
from apps import blur
from halo.analysis.simplify import simplify
from halo.autoschedule.algorithm import Algorithm, extent
from halo.autoschedule.emit import schedule_calls
from halo.autoschedule.loop_nest import nests, points
from halo.autoschedule.search import Machine, State, children_of
from halo.autoschedule.space import AT, INLINE, OUTER, ROOT, WHOLE, Decision, Nest, Placement
from halo.autoschedule.validate import apply_calls
from halo.ir import nodes as n
from halo.ir.substitute import substitute
from halo.ir.visitor import child_nodes
from halo.lang.environment import Environment
from halo.lower.pipeline import lower
from halo.random_programs.random_pipeline import random_pipeline

COUNTING = halo.Target("host", count_stores=True)


def _counts(out, calls, shape, origin, inputs):
    apply_calls([out], calls)
    kernel = out.compile(COUNTING)
    kernel.run(shape, None, origin, inputs, {})
    return kernel.store_counts


def _allocations(out, alg, after: str = "bounds_inference") -> dict[str, tuple[int, ...]]:
    """The extents of each Func's first Realize after bounds inference (or pass `after`),
    every loop at its first iteration, the outputs and inputs at their estimated boxes."""
    env = {}
    for name, box in [*alg.outputs.items(), *((k, b) for k, (b, _) in alg.inputs.items())]:
        for k, (lo, hi) in enumerate(box):
            env[f"{name}.min.{k}"] = n.const(lo)
            env[f"{name}.extent.{k}"] = n.const(hi - lo + 1)
    found: dict[str, tuple[int, ...]] = {}

    def value(e):
        return simplify(substitute(e, env))

    def visit(s):
        if isinstance(s, n.LetStmt):
            env[s.name] = value(s.value)
        elif isinstance(s, n.For):
            env[s.name] = value(s.min)
        elif isinstance(s, n.IfThenElse):
            cond = s.condition
            if isinstance(cond, n.Call) and cond.name == "whole_tiles":
                cond = cond.args[0]
            cond = value(cond)
            if isinstance(cond, n.Const):
                visit(s.then_case if cond.value else s.else_case)
                return
        elif isinstance(s, n.Realize) and s.name not in found:
            found[s.name] = tuple(int(value(e).value) for _, e in s.bounds)
        for child in child_nodes(s):
            if isinstance(child, n.Stmt):
                visit(child)

    visit(lower(Environment.of([out]), halo.Target("host"), stop_after=after).stmt)
    return found


def _check_allocations(out, alg, found):
    got = _allocations(out, alg)
    want = {name: extent(nest.store_region) for name, nest in found.items()
            if name in got and not nest.sliding}
    assert {name: got[name] for name in want} == want
    return len(want)


def _modelled(alg, decisions):
    found = nests(alg, decisions)
    return {name: sum(points(alg, name, nest)) for name, nest in found.items()}, found


def test_blur_hand_schedule_points():
    """Blur's hand schedule (tiles, blur_x per tile) on a size no tile divides."""
    with halo.NameScope():  # the boundary Func is inp_repeat_edge0 whatever ran before
        inp, out, _ = blur.algorithm()
    h, w = 37, 101
    alg = Algorithm.of(Environment.of([out]), {"inp": ((0, h - 1), (0, w - 1))},
                       {"blur_y": ((0, h - 1), (0, w - 1))}, {})
    decisions = {"blur_y": Decision(Placement(ROOT), Nest((8, 32), 8, True)),
                 "blur_x": Decision(Placement(AT, "blur_y", 0, 1), Nest((WHOLE, WHOLE), 8)),
                 "inp_repeat_edge0": Decision(Placement(INLINE))}
    want, found = _modelled(alg, decisions)
    calls = schedule_calls(alg, decisions, (), found)
    image = np.random.default_rng(0).random((h, w), dtype=np.float32)
    assert _counts(out, calls, (h, w), (0, 0), {inp: image}) == want
    assert found["blur_x"].region == ((-1, 8), (0, 31))  # a tile and its halo
    assert _check_allocations(out, alg, found) == 1  # blur_x (its input is inlined)


def _blur_sliding(h: int, w: int, tiles: tuple[int, int], unroll: bool = False):
    """(inp, out, alg, decisions): blur at h x w, blur_y in parallel `tiles`, blur_x
    sliding down each tile (computed per row of it, stored per tile)."""
    with halo.NameScope():
        inp, out, _ = blur.algorithm()
    alg = Algorithm.of(Environment.of([out]), {"inp": ((0, h - 1), (0, w - 1))},
                       {"blur_y": ((0, h - 1), (0, w - 1))}, {})
    decisions = {"blur_y": Decision(Placement(ROOT), Nest(tiles, 8, True)),
                 "blur_x": Decision(Placement(AT, "blur_y", 0, 2, store_loop=1),
                                    Nest((WHOLE, WHOLE), 8, unroll=unroll)),
                 "inp_repeat_edge0": Decision(Placement(INLINE))}
    return inp, out, alg, decisions


def test_a_sliding_window_unrolls_no_loop_of_its_own_extents():
    """A Func sliding along a consumer's loop computes more rows at the first iteration
    than at the others, so its unsplit loops have no constant extent: an unrolled nest
    there unrolls none of them (halo refuses `unroll` of such a loop)."""
    h, w = 37, 101
    inp, out, alg, decisions = _blur_sliding(h, w, (8, 32), unroll=True)
    want, found = _modelled(alg, decisions)
    assert found["blur_x"].sliding
    assert not any(lp.unrolled for lp in found["blur_x"].loops[0])
    calls = schedule_calls(alg, decisions, (), found)
    assert not any(c.method == "unroll" and c.target.func == "blur_x" for c in calls)
    image = np.random.default_rng(0).random((h, w), dtype=np.float32)
    assert _counts(out, calls, (h, w), (0, 0), {inp: image}) == want


def _read_through(how: str):
    """(inp, out): out reads f through `how` (a clamp, a division, or f's scatter)."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f, out = halo.Func("f"), halo.Func("out")
    f[y, x] = inp[y, x] * 2
    if how == "scatter":
        r = halo.RDom((0, 3), name="r")
        f[y, r.x] = f[y, r.x] + 1
    row = {"clamp": halo.clamp(y + 1, 0, inp.shape[0] - 1), "division": y // 2}.get(how, y)
    out[y, x] = f[row, x] + 1
    return inp, out


@pytest.mark.parametrize("how", ["clamp", "division", "scatter"])
def test_a_tile_read_through_a_clamp_a_division_or_a_scatter_unrolls_no_whole_loop(how):
    """f computed per 8 x 16 tile of out: read at `clamp(y + 1, ...)` or `y // 2`, or
    updated along a fixed range of x, the box of f a tile needs depends on where the
    tile is, so f's unsplit loops have no constant extent and stay rolled (halo refuses
    `unroll` of such a loop). Before, the model unrolled them and lowering refused the
    schedule (samples of random pipelines failed so)."""
    h, w = 29, 37
    with halo.NameScope():
        inp, out = _read_through(how)
    alg = Algorithm.of(Environment.of([out]), {"inp": ((0, h - 1), (0, w - 1))},
                       {"out": ((0, h - 1), (0, w - 1))}, {})
    decisions = {"out": Decision(Placement(ROOT), Nest((8, 16), 8, True)),
                 "f": Decision(Placement(AT, "out", 0, 1), Nest((WHOLE, WHOLE), 8,
                                                                unroll=True))}
    found = nests(alg, decisions)
    assert not any(lp.unrolled for stage in found["f"].loops for lp in stage)
    calls = schedule_calls(alg, decisions, (), found)
    apply_calls([out], calls)
    image = np.random.default_rng(2).random((h, w), dtype=np.float32)
    np.testing.assert_allclose(out.realize((h, w), inputs={inp: image}),
                               halo.reference(out, (h, w), inputs={inp: image}))


def test_a_sliding_window_is_modelled_folded_and_a_row_a_step():
    """blur_x slides down each 32 x 32 tile of blur_y: the model allocates what
    storage folding leaves (the power of two at least its 3-row window) and, after the
    first step, loops over the one new row."""
    h, w = 64, 96
    inp, out, alg, decisions = _blur_sliding(h, w, (32, 32))
    want, found = _modelled(alg, decisions)
    nest = found["blur_x"]
    assert nest.sliding and extent(nest.region) == (3, 32)
    assert nest.allocated == (4, 32)
    calls = schedule_calls(alg, decisions, (), found)
    image = np.random.default_rng(1).random((h, w), dtype=np.float32)
    assert _counts(out, calls, (h, w), (0, 0), {inp: image}) == want
    assert _allocations(out, alg, after="storage_folding")["blur_x"] == (4, 32)
    assert [(lp.var, lp.trips) for lp in nest.loops[0] if not lp.vector] == [("y", 1),
                                                                            ("x", 4)]


def _random_state(alg, machine, rng):
    state = State(alg)
    while not state.complete:
        state = rng.choice(children_of(state, machine, rng))
    return state


@pytest.mark.parametrize("seed", [3, 11, 40, 57, 72, 73])
def test_random_pipelines_random_states(seed):
    """Random pipelines x random states: every Func's modelled store count and
    allocation is exact."""
    p = random_pipeline(seed, max_stages=6)
    built = p.build()
    env = Environment.of([built.output])
    boxes = {i.name: tuple((0, s - 1) for s in i.shape) for i in p.inputs}
    out_box = tuple((o, o + s - 1) for o, s in zip(p.output_origin, p.output_shape, strict=True))
    alg = Algorithm.of(env, boxes, {built.output.name: out_box}, {})
    rng = random.Random(seed)
    state = _random_state(alg, Machine(2, 4), rng)
    want, found = _modelled(state.alg, state.decided)
    calls = schedule_calls(state.alg, state.decided, state.locals_, found)
    inputs = {built.params[k]: v for k, v in p.make_inputs().items()}
    got = _counts(built.output, calls, p.output_shape, p.output_origin, inputs)
    assert got == {k: v for k, v in want.items() if k in got}, "\n".join(c.source() for c in calls)
    _check_allocations(built.output, state.alg, found)


def test_a_func_read_through_a_mirror_is_realized_as_bounds_inference_bounds_it():
    """f reads g through a mirror (`x % period`, not affine), g computed per vector of
    f and stored per row. Bounds inference bounds the wrap of a vector that may start
    anywhere by the whole period, so each vector realizes all of g's row (24 columns,
    not its 8); the model counts that (it had taken the first vector's reads, as a
    window sliding along the row: a random pipeline scheduled so ran 100x slower than
    predicted). A row is one value of y: its wrap is that row's alone."""
    y, x = halo.vars("y x")
    with halo.NameScope():
        inp = halo.ImageParam(halo.float32, 2, "inp")
        g, f = halo.Func("g"), halo.Func("f")
        g[y, x] = halo.boundary.mirror_interior(inp)[y, x] * 2
        mirrored = halo.boundary.mirror_image(g, bounds=[(0, 20), (0, 24)])
        f[y, x] = mirrored[y, x] + 1
    h, w = 12, 24
    alg = Algorithm.of(Environment.of([f]), {"inp": ((0, 9), (0, 15))},
                       {"f": ((0, h - 1), (0, w - 1))}, {})
    inline = Decision(Placement(INLINE))
    decisions = {"f": Decision(Placement(ROOT), Nest((OUTER, WHOLE), 8)),
                 mirrored.name: inline, "inp_mirror_interior0": inline,
                 "g": Decision(Placement(AT, "f", 0, 1, store_loop=0),
                               Nest((WHOLE, WHOLE), 8))}
    want, found = _modelled(alg, decisions)
    assert extent(found["g"].region) == (1, 24)
    calls = schedule_calls(alg, decisions, (), found)
    image = np.random.default_rng(2).random((10, 16), dtype=np.float32)
    assert _counts(f, calls, (h, w), (0, 0), {inp: image}) == want
