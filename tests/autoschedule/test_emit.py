"""Schedule calls of search states: a vectorized loop over a whole dimension whose
extent equals the lanes at the estimate is not a constant-extent loop in the compiled
pipeline (a Func computed per tile of its consumer, the last tile shifted in), so it is
split by the lanes rather than vectorized as it is; a Func the state puts at root is
computed at root even where halo's default is elsewhere (an inline reduction)."""
from __future__ import annotations

import numpy as np

import halo
from halo.autoschedule.algorithm import Algorithm
from halo.autoschedule.emit import schedule_calls
from halo.autoschedule.loop_nest import nests
from halo.autoschedule.space import AT, OUTER, ROOT, WHOLE, Decision, Nest, Placement
from halo.autoschedule.validate import apply_calls
from halo.ir import nodes as n
from halo.ir.visitor import child_nodes
from halo.lang.environment import Environment
from halo.lower.pipeline import lower
from halo.random_programs.random_pipeline import random_pipeline


def test_whole_dimension_of_lane_extent_is_split_by_the_lanes():
    p = random_pipeline(3)  # s9[y, x] of b8[c, y, x] (a boundary condition on in1)
    with halo.NameScope():
        built = p.build()
    out = built.output
    boxes = {i.name: tuple((0, s - 1) for s in i.shape) for i in p.inputs}
    out_box = tuple((o, o + s - 1) for o, s in zip(p.output_origin, p.output_shape,
                                                   strict=True))
    alg = Algorithm.of(Environment.of([out]), boxes, {out.name: out_box}, {})
    whole = Nest((WHOLE, WHOLE, WHOLE), 16)
    decisions = {"s9": Decision(Placement(ROOT), Nest((1, 16), 16, parallel=True)),
                 "b8": Decision(Placement(AT, "s9", 0, 1, 0), whole),
                 "in1_repeat_edge0": Decision(Placement(AT, "b8", 0, 1), whole)}
    calls = schedule_calls(alg, decisions, (), nests(alg, decisions))
    assert "b8.vectorize(x, 16)" in [c.source() for c in calls]
    apply_calls([out], calls)
    inputs = {built.params[k]: v for k, v in p.make_inputs().items()}
    got = out.realize(p.output_shape, inputs=inputs, origin=p.output_origin)
    want = halo.reference(out, p.output_shape, inputs=inputs, origin=p.output_origin)
    np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)


def _realized_inside(stmt, func: str, consumer: str, inside: bool = False) -> bool:
    """Whether `func` is realized inside the production of `consumer`."""
    if isinstance(stmt, n.Realize) and stmt.name == func:
        return inside
    inside = inside or (isinstance(stmt, n.ProducerConsumer) and stmt.name == consumer)
    return any(_realized_inside(c, func, consumer, inside) for c in child_nodes(stmt)
               if isinstance(c, n.Stmt))


def test_inline_reduction_at_root_is_computed_at_root():
    """An inline reduction's default placement is inside its consumer: a state that
    puts it at root says so, or its tiled, parallel nest runs once per consumer point."""
    y, x = halo.vars("y x")
    with halo.NameScope():
        inp = halo.ImageParam(halo.float32, 2, "inp")
        r = halo.RDom((0, 2), (0, 2), name="r")
        pooled = halo.Func("pooled")
        pooled[y, x] = halo.maximum(inp[y * 2 + r.x, x * 2 + r.y], name="mx")
    shape = (13, 37)
    alg = Algorithm.of(Environment.of([pooled]), {"inp": ((0, 25), (0, 73))},
                       {"pooled": ((0, 12), (0, 36))}, {})
    decisions = {"pooled": Decision(Placement(ROOT), Nest((OUTER, WHOLE), 8, parallel=True)),
                 "mx": Decision(Placement(ROOT), Nest((4, 16), 8, parallel=True))}
    calls = schedule_calls(alg, decisions, (), nests(alg, decisions))
    assert "mx.compute_root()" in [c.source() for c in calls]
    apply_calls([pooled], calls)
    assert not _realized_inside(lower(Environment.of([pooled]), halo.Target()).stmt, "mx",
                                "pooled")
    image = np.random.default_rng(0).random((26, 74), dtype=np.float32)
    np.testing.assert_array_equal(pooled.realize(shape, inputs={inp: image}),
                                  halo.reference(pooled, shape, inputs={inp: image}))
