"""Schedule calls of search states: a vectorized loop over a whole dimension whose
extent equals the lanes at the estimate is not a constant-extent loop in the compiled
pipeline (a Func computed per tile of its consumer, the last tile shifted in), so it is
split by the lanes rather than vectorized as it is."""
from __future__ import annotations

import numpy as np

import halo
from halo.autoschedule.algorithm import Algorithm
from halo.autoschedule.emit import schedule_calls
from halo.autoschedule.loop_nest import nests
from halo.autoschedule.space import AT, ROOT, WHOLE, Decision, Nest, Placement
from halo.autoschedule.validate import apply_calls
from halo.lang.environment import Environment
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
