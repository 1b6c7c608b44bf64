"""The search space holds halo's hand schedules: each app's hand schedule (or one that
computes the same points the same way) is a point of the space, its placements among
the legal sites the search offers, and it lowers to the hand schedule's IR where the
loop order is the same."""
from __future__ import annotations

import numpy as np

import halo
from apps import blur, conv_relu, harris, matmul
from halo.autoschedule.algorithm import Algorithm
from halo.autoschedule.emit import schedule_calls
from halo.autoschedule.loop_nest import nests
from halo.autoschedule.search import legal_sites
from halo.autoschedule.space import AT, INLINE, ROOT, WHOLE, Decision, Nest, Placement
from halo.autoschedule.validate import apply_calls
from halo.lang.environment import Environment


def _box(shape):
    return tuple((0, s - 1) for s in shape)


def _apply(alg, out, decisions, locals_=()):
    found = nests(alg, decisions)
    order = list(reversed(alg.funcs))  # the search's: outputs back
    for name, d in decisions.items():
        if d.placement.kind == AT:
            site = (d.placement.consumer, d.placement.stage, d.placement.loop)
            before = {k: v for k, v in decisions.items() if order.index(k) < order.index(name)}
            assert site in legal_sites(alg, before, nests(alg, before), name)
    apply_calls([out], schedule_calls(alg, decisions, locals_, found))


def test_blur_hand_schedule_is_a_point():
    lanes = 8
    with halo.NameScope():
        _, hand, funcs = blur.algorithm()
        blur.schedule(funcs)
    with halo.NameScope():
        inp, out, _ = blur.algorithm()
    alg = Algorithm.of(Environment.of([out]), {"inp": _box((480, 640))},
                       {"blur_y": _box((480, 640))}, {})
    _apply(alg, out, {
        "blur_y": Decision(Placement(ROOT), Nest((32, 256), lanes, parallel=True)),
        "blur_x": Decision(Placement(AT, "blur_y", 0, 1), Nest((WHOLE, WHOLE), lanes)),
        "inp_repeat_edge0": Decision(Placement(INLINE))})
    assert str(out.lower()) == str(hand.lower())


def test_harris_hand_schedule_is_a_point():
    """Strips of rows in parallel, gray/Ix/Iy sliding down each strip (store_at outside
    compute_at)."""
    lanes = harris.vector()
    with halo.NameScope():
        _, hand, funcs = harris.algorithm()
        harris.schedule(funcs)
    with halo.NameScope():
        _, out, funcs = harris.algorithm()
    alg = Algorithm.of(Environment.of([out]), {"image": _box((3, 100, 200))},
                       {"output": _box((96, 196))}, {})
    slide = Decision(Placement(AT, "output", 0, 1, store_loop=0), Nest((WHOLE, WHOLE), lanes))
    decisions = {"output": Decision(Placement(ROOT), Nest((harris.STRIP_ROWS, WHOLE), lanes,
                                                          parallel=True)),
                 "gray": slide, "Ix": slide, "Iy": slide}
    decisions.update({name: Decision(Placement(INLINE)) for name in alg.funcs
                      if name not in decisions})
    _apply(alg, out, decisions)
    assert str(out.lower()) == str(hand.lower())


def test_matmul_register_tile_is_a_point():
    """apps/matmul.py's pattern: C tiled and parallel, C_local (cache_write("local"))
    per tile with the reduction loop outermost and the tile unrolled and vectorized."""
    lanes = halo.Target("host").natural_vector_size(halo.float32)
    A, B, C, _ = matmul.algorithm()
    n = 64
    alg = Algorithm.of(Environment.of([C]), {"A": _box((n, n)), "B": _box((n, n))},
                       {"C": _box((n, n))}, {}).with_local("C")
    decisions = {"C": Decision(Placement(ROOT), Nest((4, 3 * lanes), lanes, parallel=True,
                                                     fuse_outer=True, unroll=True)),
                 "C_local": Decision(Placement(AT, "C", 0, 0),
                                     Nest((4, WHOLE), lanes, unroll=True,
                                          reduction_outer=True))}
    _apply(alg, C, decisions, locals_=("C",))
    text = str(C.lower())
    assert "C_local" in text and "parallel" in text
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    np.testing.assert_allclose(C.realize((n, n), inputs={A: a, B: b}), a @ b, rtol=1e-4)


def test_conv_relu_blocked_schedule_is_a_point():
    """apps/conv_relu.py's pattern: relu in blocks of channels x rows x a vector, conv
    per block with its reduction outside the unrolled, vectorized block, padded at root."""
    lanes = conv_relu.vector()
    with halo.NameScope():  # the boundary Func is image_constant_exterior0
        image, weights, bias, relu, _ = conv_relu.algorithm()
    shape = (1, 8, 8, 12, 20)
    batch, c_in, c_out, h, w = shape
    alg = Algorithm.of(Environment.of([relu]),
                       {"image": _box((batch, c_in, h, w)), "weights": _box((c_out, c_in, 3, 3)),
                        "bias": _box((c_out,))}, {"relu": _box((batch, c_out, h, w))}, {})
    decisions = {
        "relu": Decision(Placement(ROOT), Nest((1, 4, 2, lanes), lanes, parallel=True)),
        "conv": Decision(Placement(AT, "relu", 0, 3),
                         Nest((1, 4, 2, WHOLE), lanes, unroll=True, reduction_outer=True)),
        "image_constant_exterior0": Decision(Placement(ROOT), Nest((1, 1, 1, WHOLE), lanes,
                                                                   parallel=True))}
    _apply(alg, relu, decisions)
    inputs = conv_relu.make_inputs(shape)
    got = relu.realize((batch, c_out, h, w), inputs=inputs)
    want = conv_relu.numpy_conv_relu(*inputs.values())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_matmul_packed_panels_are_a_point():
    """apps/matmul.py's packed panels: C's tasks are column panels (its column tiles
    outermost, parallel), C_local per register block inside, and B copied per panel
    (`B.cache_read("global", [C_local])` at the task loop: `Algorithm.with_panels`),
    right at sizes no tile divides."""
    lanes = halo.Target("host").natural_vector_size(halo.float32)
    decisions = {"C": Decision(Placement(ROOT), Nest((4, 2 * lanes), lanes, parallel=True,
                                                     unroll=True, vector_tiles_first=True)),
                 "C_local": Decision(Placement(AT, "C", 0, 1),
                                     Nest((WHOLE, WHOLE), lanes, unroll=True,
                                          reduction_outer=True)),
                 "B_global": Decision(Placement(AT, "C", 0, 0), Nest((WHOLE, WHOLE), lanes))}
    rng = np.random.default_rng(1)
    for m, k, n in ((1, 1, 1), (7, 5, 3), (67, 13, 2 * lanes + 5)):
        A, B, C, _ = matmul.algorithm()
        alg = Algorithm.of(Environment.of([C]), {"A": _box((m, k)), "B": _box((k, n))},
                           {"C": _box((m, n))}, {}).with_local("C").with_panels("C_local")
        assert alg.funcs["B_global"].copy_of == "B" and "A_global" not in alg.funcs
        assert alg.panel_readers() == ["C_local"]  # what a stored state replays
        _apply(alg, C, decisions, locals_=("C",))
        text = str(C.lower())
        assert text.index("for C.s0.j.jo in parallel(") < text.index("allocate B_global") \
            < text.index("for C.s0.i.io in range(")
        a = rng.random((m, k), dtype=np.float32)
        b = rng.random((k, n), dtype=np.float32)
        np.testing.assert_allclose(C.realize((m, n), inputs={A: a, B: b}), a @ b, rtol=1e-4)


def test_an_inlined_panel_is_no_copy():
    """A panel the search inlines makes no `cache_read` call: B is read in place."""
    lanes = halo.Target("host").natural_vector_size(halo.float32)
    A, B, C, _ = matmul.algorithm()
    alg = Algorithm.of(Environment.of([C]), {"A": _box((32, 32)), "B": _box((32, 32))},
                       {"C": _box((32, 32))}, {}).with_local("C").with_panels("C_local")
    decisions = {"C": Decision(Placement(ROOT), Nest((4, lanes), lanes, parallel=True)),
                 "C_local": Decision(Placement(AT, "C", 0, 1),
                                     Nest((WHOLE, WHOLE), lanes, reduction_outer=True)),
                 "B_global": Decision(Placement(INLINE))}
    calls = schedule_calls(alg, decisions, ("C",), nests(alg, decisions))
    assert [c.method for c in calls if c.method.startswith("cache")] == ["cache_write"]
