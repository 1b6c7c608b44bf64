"""What the search space and the model learned from measuring autoschedules against
the hand schedules: register tiles priced by their accumulators (and found, with their
local stage), small loops of a constant tile unrolled, sliding windows only along loops
that move them, row reductions offered a vector rfactor, and a validation run that
stays small when each output point is a long reduction."""
from __future__ import annotations

import random
import time
from dataclasses import replace

import numpy as np

import halo
from apps import conv_relu, matmul, softmax, unsharp
from halo.autoschedule import _algorithm
from halo.autoschedule.algorithm import Algorithm
from halo.autoschedule.cost_model import default_model
from halo.autoschedule.features import SERIAL_CYCLES, TERMS, cost_terms, stage_features
from halo.autoschedule.loop_nest import nests
from halo.autoschedule.reductions import rfactor_variants
from halo.autoschedule.search import Machine, Search, State, _nest_options, rollout
from halo.autoschedule.space import AT, INLINE, OUTER, ROOT, WHOLE, Decision, Nest, Placement
from halo.autoschedule.validate import FULL_RUN_WORK, _shapes, _work_per_point
from halo.lang.environment import Environment


def _box(shape):
    return tuple((0, s - 1) for s in shape)


def _matmul_alg(n):
    A, B, C, _ = matmul.algorithm()
    alg = Algorithm.of(Environment.of([C]), {"A": _box((n, n)), "B": _box((n, n))},
                       {"C": _box((n, n))}, {})
    return A, B, C, alg


def test_matmul_autoschedule_keeps_accumulators_in_a_local_tile():
    """The search finds apps/matmul.py's pattern (a cache_write("local") register tile
    per tile of C) and the result is right at a size no tile divides."""
    A, B, C, _ = matmul.algorithm()
    n = 131
    result = halo.autoschedule(C, estimates={C: (n, n), A: (n, n), B: (n, n)}, budget_s=10)
    assert "cache_write('local')" in result.source
    rng = np.random.default_rng(3)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    np.testing.assert_allclose(C.realize((n, n), inputs={A: a, B: b}), a @ b, rtol=1e-4)


def test_avx2_matmul_register_tile_fits_the_registers():
    """With AVX2's 8 lanes and 16 registers, the coarse tiles alone (4 rows by 1, 4 or
    16 vectors, or more rows) give no register tile both big and unspilled, and the
    search went without one (10x slower than the hand schedule); with tiles of 2
    vectors it keeps 4 x 2 vectors of accumulators in registers."""
    *_, alg = _matmul_alg(1024)
    search = Search(default_model(), Machine(2, 8), 8, 0, time.monotonic() + 60)
    best = search.run([State(alg)])[0].state
    assert best.locals_ == ("C",)
    update = _update_features(best.alg, best.decided, "C_local", lanes=8)
    assert 4 <= update.accumulator_registers <= 12 and update.stored_points == 0


def test_matmul_search_packs_b_into_column_panels():
    """Read in place, a task's strip of B is rows a matrix row apart: on an Intel core,
    matmul 1024^3 autoscheduled so ran 3.9x its hand schedule. The search copies the
    strip per column panel (`B.cache_read` at the task loop, C's column tiles outermost)
    and prices the copy below the reads from far caches it saves."""
    *_, alg = _matmul_alg(1024)
    for lanes in (8, 16):
        search = Search(default_model(), Machine(2, lanes), 8, 0, time.monotonic() + 60)
        best = search.run([State(alg)])[0].state
        assert best.decided["B_global"].placement == Placement(AT, "C", 0, 0)
        assert best.decided["C"].nest.vector_tiles_first
        in_place = {**best.decided, "B_global": Decision(Placement(INLINE))}
        packed, unpacked = search.price([best, replace(best, decisions=tuple(in_place.items()))])
        assert packed < unpacked


def _update_features(alg, decisions, name, lanes=16):
    found = nests(alg, decisions)
    return next(f for f in stage_features(alg, decisions, found, 2, lanes,
                                          (32 << 10, 1 << 20, 16 << 20))
                if f.label.startswith(f"{name}.update"))


def test_accumulators_in_registers_only_when_they_fit():
    """8 x 48 accumulators of a local stage (24 AVX-512 registers) store nothing per
    reduction step; 8 x 128 of them (64 registers) spill; a 8 x 256 tile whose columns
    loop isn't unrolled is no register tile; a tile on the output itself stores."""
    *_, alg = _matmul_alg(256)
    local = alg.with_local("C")

    def tile(columns):
        return {"C": Decision(Placement(ROOT), Nest((8, columns), 16, parallel=True,
                                                    fuse_outer=True)),
                "C_local": Decision(Placement(AT, "C", 0, 0),
                                    Nest((WHOLE, WHOLE), 16, unroll=True,
                                         reduction_outer=True))}
    fits = _update_features(local, tile(48), "C_local")
    assert fits.accumulator_registers == 24 and fits.stored_points == 0
    spills = _update_features(local, tile(128), "C_local")
    assert spills.accumulator_registers == 64 and spills.stored_points == spills.points
    looped = _update_features(local, tile(256), "C_local")
    assert looped.stored_points == looped.points
    on_output = _update_features(alg, {"C": Decision(Placement(ROOT), Nest(
        (8, 48), 16, parallel=True, unroll=True, reduction_outer=True))}, "C")
    assert on_output.stored_points == on_output.points


def test_constant_tile_unrolls_its_unsplit_loops():
    """conv computed per block of relu (every relu dimension iterated outside it) has
    constant extents: its small loops are unrolled without a split (a split update
    gets a guarded tail); computed per row of relu it doesn't."""
    with halo.NameScope():
        image, weights, bias, relu, _ = conv_relu.algorithm()
    shape = (1, 8, 8, 12, 32)
    batch, c_in, c_out, h, w = shape
    alg = Algorithm.of(Environment.of([relu]),
                       {"image": _box((batch, c_in, h, w)), "weights": _box((c_out, c_in, 3, 3)),
                        "bias": _box((c_out,))}, {"relu": _box((batch, c_out, h, w))}, {})
    conv = Nest((WHOLE,) * 4, 16, unroll=True, reduction_outer=True)
    relu_nest = Nest((1, 4, 2, 16), 16, parallel=True, fuse_outer=True)
    for loop, unrolled in ((2, {"n", "co", "y"}), (1, set())):
        decisions = {"relu": Decision(Placement(ROOT), relu_nest),
                     "conv": Decision(Placement(AT, "relu", 0, loop), conv)}
        loops = nests(alg, decisions)["conv"].loops[1]
        assert {lp.name for lp in loops if lp.unrolled} == unrolled
        assert not any(lp.name == f"{lp.var}o" for lp in loops)


def test_sliding_windows_only_along_loops_that_move_them():
    """unsharp's output reads gray at (y, x) for every channel c: a window slid along c
    would be recomputed per channel. relu reads conv at its output channel, but what
    conv reads of the padded input doesn't move with it: a padded window stored
    outside relu's channel loop and computed inside it was computed again for each
    channel (5x the hand schedule's time on AVX2)."""
    with halo.NameScope():
        image, out, _ = unsharp.algorithm()
    alg = _algorithm(Environment.of([out]), {image: (3, 40, 60), out: (3, 40, 60)}, None)
    stage = alg.funcs[out.name].stages[0]
    assert not alg.read_moves(stage, "gray", "c")
    assert alg.read_moves(stage, "gray", "y") and alg.read_moves(stage, "blur_y", "x")
    with halo.NameScope():
        image, weights, bias, relu, _ = conv_relu.algorithm()
    est = {image: (1, 8, 12, 20), weights: (8, 8, 3, 3), bias: (8,), relu: (1, 8, 12, 20)}
    alg = _algorithm(Environment.of([relu]), est, None)
    padded = next(name for name in alg.funcs if name.startswith("image_constant_exterior"))
    stage = alg.funcs[relu.name].stages[0]
    assert alg.read_moves(stage, "conv", "co") and not alg.read_moves(stage, padded, "co")
    assert alg.read_moves(stage, padded, "y") and alg.read_moves(stage, padded, "x")


def test_row_reductions_get_a_vector_rfactor():
    """softmax's row max and row sum have 4096 rows (pure points enough for the cores)
    but read along the stride-1 dimension as the reduction moves: the per-lane rfactor
    (apps/softmax.py's schedule) is a start of the search."""
    with halo.NameScope():
        x, out, _ = softmax.algorithm()
    est = {x: (4096, 1024), out: (4096, 1024)}
    alg = _algorithm(Environment.of([out]), est, None)
    variants = rfactor_variants(alg, [out], 2, 16,
                                lambda: _algorithm(Environment.of([out]), est, None))
    assert len(variants) == 1
    calls, variant = variants[0]
    assert [c.method for c in calls] == ["split", "rfactor"] * 2
    assert {"row_max_intm", "row_sum_intm"} <= set(variant.funcs)


def _softmax_variant(shape):
    with halo.NameScope():
        x, out, _ = softmax.algorithm()
    est = {x: shape, out: shape}
    alg = _algorithm(Environment.of([out]), est, None)
    [(calls, variant)] = rfactor_variants(alg, [out], 2, 16,
                                          lambda: _algorithm(Environment.of([out]), est, None))
    return alg, calls, variant


def test_a_rollout_fuses_each_producer_where_no_loop_recomputes_it():
    """softmax after its vector rfactor, with only the output decided (a row per task):
    the rollout computes every producer per row (along the columns loop, the row's
    max and sum would be recomputed), the partial reductions vectorized across their
    lanes with the reduction loop outside them: apps/softmax.py's schedule."""
    _, calls, variant = _softmax_variant((64, 256))
    row = Decision(Placement(ROOT), Nest((OUTER, WHOLE), 16, parallel=True))
    done = rollout(State(variant, (("softmax", row),), prefix=calls), 16)
    assert done.complete
    decided = done.decided
    for name in ("e", "row_sum", "row_max", "row_sum_intm", "row_max_intm"):
        p = decided[name].placement
        assert p.kind == AT and p.loop == 0 and p.store_loop is None, (name, p)
    assert decided["e"].placement.consumer == "softmax"
    partial = decided["row_sum_intm"].nest
    assert (partial.vector, partial.vector_dim, partial.reduction_outer) == (16, 0, True)
    loops = nests(variant, decided)["row_sum_intm"].loops[1]
    assert [lp.name for lp in loops] == ["rxo", "i", "u"] and loops[-1].vector


def test_softmax_search_reaches_a_row_per_task():
    """The beam decides softmax's row tiling first. Priced with its producers at root,
    every tiling cost the same and the beam kept 16- and 64-row tiles, from which the
    row-per-task schedule (apps/softmax.py's; 2.5x faster than what the search chose)
    can't be reached. Priced with its rollout too, the search finds a schedule the
    model prices at most as high as that one, whose intermediates are per row."""
    alg, calls, variant = _softmax_variant((4096, 1024))
    machine = Machine(2, 16)
    row = {"softmax": Decision(Placement(ROOT), Nest((OUTER, WHOLE), 16, parallel=True)),
           "e": Decision(Placement(AT, "softmax", 0, 0), Nest((WHOLE, WHOLE), 16)),
           "inverse": Decision(Placement(AT, "softmax", 0, 0), Nest((WHOLE,)))}
    for name in ("row_sum", "row_max"):
        row[name] = Decision(Placement(AT, "softmax", 0, 0), Nest((WHOLE,)))
        row[f"{name}_intm"] = Decision(Placement(AT, "softmax", 0, 0), Nest(
            (WHOLE, WHOLE), 16, 0, unroll=True, reduction_outer=True))
    hand = State(variant, tuple((n, row[n]) for n in State(variant).order), prefix=calls)
    search = Search(default_model(), machine, 8, 0, time.monotonic() + 60)
    best = search.run([State(alg), State(variant, prefix=calls)])[0]
    assert best.seconds <= search.price([hand])[0]
    e = best.state.decided["e"]
    assert e.placement.kind == AT
    assert nests(best.state.alg, best.state.decided)["e"].region[0] == (0, 0)


def test_a_search_out_of_time_returns_its_cheapest_rollout_first():
    """Past its deadline and grace, the search returns the rollouts it priced (complete,
    each Func placed) before the beam's states with the rest at root (unpriced)."""
    alg, calls, variant = _softmax_variant((256, 128))
    search = Search(default_model(), Machine(2, 16), 8, 0, time.monotonic() - 60)
    ranked = search.run([State(alg), State(variant, prefix=calls)])
    assert ranked[0].seconds < float("inf") and ranked[-1].seconds == float("inf")
    first = ranked[0].state
    assert first.complete and first.decided["e"].placement.kind == AT


def test_validation_run_is_capped_by_work():
    """matmul 2048^3's root schedule would run 8.6G multiply-adds unscheduled to check
    a candidate: its estimate's run shrinks by thirds; a cheap pipeline's doesn't."""
    *_, alg = _matmul_alg(2048)
    work = _work_per_point(alg, _box((2048, 2048)))
    assert 2048 <= work <= 2050
    full, third, one, small = _shapes((2048, 2048), work)
    assert full[0] * full[1] * work <= FULL_RUN_WORK and full == (227, 227)
    assert third == (75, 75) and one == (1, 1) and small == (7, 7)
    assert _shapes((480, 640), 2.0)[0] == (480, 640)


def test_an_expression_that_occurs_again_is_counted_once():
    """harris's response reads Sxx three times (Sxx * Syy, and twice in trace^2):
    inlined, compiled code computes its box sum once. Counted per occurrence, the
    output cost 144 cycles a point and the search priced Halide's schedule (everything
    after Ix and Iy inlined) above one that stored Sxx, Syy and Sxy (1.6-2x slower)."""
    x = halo.Var("x")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x] * 3 + 1
    f[x] = g[x] * g[x] + (g[x] + g[x + 1])
    alg = _algorithm(Environment.of([f]), {inp: (40,), f: (38,)}, None)
    stage = alg.funcs[f.name].stages[0]
    assert [a.callee for a in stage.accesses] == [g.name, g.name]  # g[x] once, g[x + 1]
    assert stage.ops["Mul"] == 1 and stage.ops["Add"] == 2
    decisions = {f.name: Decision(Placement(ROOT), Nest((WHOLE,), 1)),
                 g.name: Decision(Placement(INLINE))}
    feature, = stage_features(alg, decisions, nests(alg, decisions), 1, 8, (32768, 2**19, 2**22))
    # f's Mul and 2 Adds, and g's Mul and Add for each of its two points
    assert feature.ops["Mul"] == 3 and feature.ops["Add"] == 4


def test_a_loop_entry_covers_the_vector_and_unrolled_loops_inside_it():
    """`innermost_extent` counts the points one entry of the innermost loop that runs
    as a loop covers: a vector loop inside it is one instruction, not a loop (it was
    the vector's lanes, so 128-column tiles and whole rows cost the same entries)."""
    x, y = halo.vars("x y")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x] * 2
    alg = _algorithm(Environment.of([f]), {inp: (64, 512), f: (64, 512)}, None)

    def entry(tiles, vector, unroll=False):
        decisions = {f.name: Decision(Placement(ROOT), Nest(tiles, vector, unroll=unroll))}
        feature, = stage_features(alg, decisions, nests(alg, decisions), 1, 8,
                                  (32768, 2**19, 2**22))
        return feature.innermost_extent

    assert entry((WHOLE, WHOLE), 8) == 512
    assert entry((WHOLE, 128), 8) == 128
    assert entry((WHOLE, WHOLE), 1) == 512
    assert entry((WHOLE, 32), 8) == 32  # the tile's loop of 4 vectors runs
    assert entry((WHOLE, 32), 8, unroll=True) == 64 * 32  # unrolled: the row loop runs


def test_a_loop_of_one_trip_is_no_loop_entry():
    """A reduction's register tile computed per row of its consumer: its row loop runs
    once inside the reduction loop, which is the loop whose entries count."""
    x, y = halo.vars("x y")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 64), name="r")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = 0.0
    g[y, x] += inp[y, r.x * 8 + x]
    f[y, x] = g[y, x] * 2
    alg = _algorithm(Environment.of([f]), {inp: (32, 512), f: (32, 8)}, None)
    decisions = {f.name: Decision(Placement(ROOT), Nest((OUTER, WHOLE), 8)),
                 g.name: Decision(Placement(AT, f.name, 0, 0),
                                  Nest((WHOLE, WHOLE), 8, reduction_outer=True))}
    features = stage_features(alg, decisions, nests(alg, decisions), 1, 8,
                              (32768, 2**19, 2**22))
    update = next(s for s in features if s.label == f"{g.name}.update(0)")
    assert update.innermost_extent == 64 * 8  # r's 64 trips of one 8-lane row


def test_a_func_computed_per_point_enters_no_loop():
    """g computed at f's innermost loop covers one point a realization: none of its
    loops runs, so it enters none (LLVM leaves straight-line code; such a schedule of a
    random pipeline ran 0.55 ms where 5.9 ms of loop entries were priced)."""
    x, y = halo.vars("x y")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 3
    f[y, x] = g[y, x] + 1
    alg = _algorithm(Environment.of([f]), {inp: (32, 64), f: (32, 64)}, None)
    decisions = {f.name: Decision(Placement(ROOT), Nest((WHOLE, WHOLE))),
                 g.name: Decision(Placement(AT, f.name, 0, 1), Nest((WHOLE, WHOLE)))}
    features = stage_features(alg, decisions, nests(alg, decisions), 1, 8,
                              (32768, 2**19, 2**22))
    per_point = next(s for s in features if s.label == g.name)
    assert per_point.points == 32 * 64 and per_point.innermost_extent == 0
    alone = cost_terms([per_point], 1, 8)
    assert alone[TERMS.index("innermost_loops")] == 0
    assert alone[TERMS.index("compute")] > 0


def _root_features(f, estimates, nest):
    """The features of `f` at root with `nest`, every other Func inlined."""
    alg = _algorithm(Environment.of([f]), estimates, None)
    decisions = {f.name: Decision(Placement(ROOT), nest),
                 **{name: Decision(Placement(INLINE)) for name in alg.funcs if name != f.name}}
    return stage_features(alg, decisions, nests(alg, decisions), 1, 8,
                          (32768, 2**19, 2**22))


def test_a_wrap_along_the_row_divides_lane_by_lane():
    """A wrapping boundary's `x % width` by the image's run-time width: no vector unit
    divides integers, so each lane divides alone (on a Zen 3 core, 7 cycles a point
    against 1 for the copy it guards), where an index had cost nothing. The row's
    `y % height` is the same along the row (hoisted), and a clamp is a vector min/max."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    wrapped, clamped = halo.Func("wrapped"), halo.Func("clamped")
    wrapped[y, x] = halo.boundary.repeat_image(inp)[y, x]
    clamped[y, x] = halo.boundary.repeat_edge(inp)[y, x]
    for f, serial in ((wrapped, SERIAL_CYCLES["Mod_int_by_value"]), (clamped, 0)):
        feature, = _root_features(f, {f: (64, 512), inp: (64, 512)},
                                  Nest((WHOLE, WHOLE), 8))
        assert feature.serial_cycles == serial
        assert feature.ops["Mod_int_by_value"] == (1 if serial else 0)


def test_a_parallel_loop_is_charged_where_it_wakes_the_threads():
    """Waking the thread pool costs tens of microseconds, and each thread then claims
    chunks of tasks cheaply: a parallel loop is charged once per entry, whatever its
    task count; a Func computed inside another's parallel loop runs on a team of one;
    a serial nest wakes nothing."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2
    f[y, x] = g[y, x] + g[y, x + 1]
    alg = _algorithm(Environment.of([f]), {inp: (512, 513), f: (512, 512)}, None)

    def launches(f_nest, g_placement):
        decisions = {f.name: Decision(Placement(ROOT), f_nest),
                     g.name: Decision(g_placement, Nest((WHOLE, WHOLE), 8))}
        features = stage_features(alg, decisions, nests(alg, decisions), 4, 8,
                                  (32768, 2**19, 2**22))
        return {s.label: s.parallel_launches for s in features}

    few, many = Nest((256, WHOLE), 8, parallel=True), Nest((8, WHOLE), 8, parallel=True)
    assert launches(few, Placement(ROOT)) == launches(many, Placement(ROOT)) == \
        {f.name: 1, g.name: 0}  # g's root nest here is serial
    assert launches(many, Placement(AT, f.name, 0, 0)) == {f.name: 1, g.name: 0}
    assert launches(Nest((8, WHOLE), 8), Placement(ROOT)) == {f.name: 0, g.name: 0}


def test_reads_through_a_wrap_are_at_most_the_rows_a_tile_touches():
    """A tile's reads through a wrap span the whole image by their bounds, though each
    point reads one element: bytes read are capped by the rows the tile's points touch
    (they had been the whole 4 MB image once per tile, 10^4 times too many)."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = halo.boundary.repeat_image(inp)[y, x] + 1
    feature, = _root_features(f, {f: (1024, 1024), inp: (1024, 1024)},
                              Nest((32, 256), 8, parallel=True))
    image = 1024 * 1024 * 4
    assert image <= sum(feature.bytes_read_by_level.values()) < 1.5 * image


def test_a_small_root_func_may_run_on_one_core():
    """A root Func of few points is also offered serial nests (waking the threads would
    cost more than its work); a large one only parallel ones."""
    y, x = halo.vars("y x")
    f = halo.Func("f")
    f[y, x] = halo.cast(halo.float32, x + y)
    model = _algorithm(Environment.of([f]), {f: (40, 50)}, None).funcs[f.name]
    machine = Machine(2, 8)
    small = _nest_options(model, {"y": 40, "x": 50}, machine, random.Random(0), True)
    large = _nest_options(model, {"y": 1024, "x": 1024}, machine, random.Random(0), True)
    assert {n.parallel for n in small} == {True, False}
    assert {n.parallel for n in large} == {True}


def test_a_window_folded_along_the_row_is_gathered_where_a_vector_may_wrap():
    """g slides along the row (computed per 16-column tile of f, stored per row), so
    storage folding wraps its columns (`% 32`, `% 16`): a vector read one column off its
    consumer's may wrap, and each lane loads alone; one read at the consumer's own,
    aligned columns is a run of memory (unsharp slid so ran 2.7x its hand schedule)."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")

    def classes(consumer_of):
        g, f = halo.Func("g"), halo.Func("f")
        g[y, x] = inp[y, x] * 2
        f[y, x] = consumer_of(g)
        alg = _algorithm(Environment.of([f]), {inp: (64, 514), f: (64, 512)}, None)
        decisions = {f.name: Decision(Placement(ROOT), Nest((OUTER, 16), 16)),
                     g.name: Decision(Placement(AT, f.name, 0, 1, store_loop=0),
                                      Nest((WHOLE, WHOLE), 16))}
        found = nests(alg, decisions)
        assert found[g.name].sliding and found[g.name].allocated[-1] in (16, 32)  # folded
        features = stage_features(alg, decisions, found, 1, 16, (32768, 2**19, 2**22))
        return next(s for s in features if s.label == f.name).access_classes

    assert classes(lambda g: g[y, x - 1] + g[y, x + 1]) == {"gather": 2}
    assert classes(lambda g: g[y, x] * 3) == {"dense": 1}


def _unsharp_output_reads(gray_placement):
    """Where unsharp's output stage (tiles of 32 x 256 a task) reads its image from, by
    cache level, with gray (which reads the same image) placed at `gray_placement`."""
    with halo.NameScope():
        image, out, _ = unsharp.algorithm()
    shape = (3, 1536, 2560)
    alg = _algorithm(Environment.of([out]), {image: shape, out: shape}, None)
    edge = next(name for name in alg.funcs if "repeat" in name)
    tile = Nest((WHOLE, 32, 256), 16, parallel=True)
    inner = Decision(Placement(AT, "output", 0, 1), Nest((WHOLE, WHOLE), 16))
    decisions = {"output": Decision(Placement(ROOT), tile), "ratio": inner,
                 "sharpen": Decision(Placement(INLINE)), "blur_x": Decision(Placement(INLINE)),
                 "blur_y": inner, "gray": gray_placement, edge: Decision(Placement(INLINE))}
    decisions = {name: decisions[name] for name in reversed(alg.funcs)}
    found = nests(alg, decisions)
    features = stage_features(alg, decisions, found, 2, 16, (32 << 10, 1 << 20, 16 << 20))
    return next(f for f in features if f.label.startswith("output")).bytes_read_by_level


def test_what_a_func_inside_the_same_tile_just_read_comes_from_the_cache():
    """gray, computed per tile of output, reads the tile's image (with the blur's
    margins) just before output reads it again: output's reads come from L2, where the
    tile's reads fit (they were charged from DRAM twice, which priced the hand schedule
    1.4x too slow). With gray at root, output's reads of each tile are the first."""
    per_tile = _unsharp_output_reads(
        Decision(Placement(AT, "output", 0, 1), Nest((WHOLE, WHOLE), 16)))
    at_root = _unsharp_output_reads(
        Decision(Placement(ROOT), Nest((WHOLE, 64), 16, parallel=True)))
    image_bytes = 3 * 1536 * 2560 * 4
    assert per_tile.get("dram", 0) == 0 and per_tile["l2"] >= image_bytes
    assert at_root["dram"] >= image_bytes


def test_a_vector_twice_the_natural_width_loads_as_two():
    """On 16 lanes, 32 lanes of a float are two registers: two loads, as two vectors of
    16 (it was charged one)."""
    with halo.NameScope():
        image, out, _ = unsharp.algorithm()
    shape = (3, 64, 64)
    f, = _root_features(out, {image: shape, out: shape}, Nest((WHOLE, WHOLE, WHOLE), 16))
    loads = TERMS.index("loads")
    terms = {lanes: cost_terms([replace(f, vector_lanes=lanes)], 1, 16)[loads]
             for lanes in (8, 16, 32)}
    assert terms[32] == terms[16] < terms[8]

