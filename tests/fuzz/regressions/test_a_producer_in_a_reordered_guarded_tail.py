"""A segfault (found by `python -m halo.fuzz --seed 20261207`, program 20261207000201,
schedule 20261207000603): s3's guarded tile loops are reordered (yi3 outside yo1), so at
an yi3 past the end every yo1 is guarded off. s2, computed at yo1, still ran there, over
the region bounds inference gives a guarded tail: y clamped into range. But b1, computed
at yi3 further out, covered y's range over yo1 intersected with the promised range, which
is empty there: s2 read b1 before its buffer (or from a null one). A producer is now
computed under the guards that its compute loop decides (schedule_functions)."""
import numpy as np

import halo
from halo.ir import nodes as n
from halo.ir.visitor import walk
from tests.fuzz.regressions.child_process import assert_survives_in_a_child


def _pipeline():
    y, x, yxf1, yo1, xo2, yi3, xi4 = halo.vars("y x yxf1 yo1 xo2 yi3 xi4")
    in0 = halo.ImageParam(halo.uint8, 2, "in0")
    b1, s2, s3, s4, s5 = (halo.Func(name) for name in ("b1", "s2", "s3", "s4", "s5"))
    b1[y, x] = halo.boundary.constant_exterior(in0, 9)[y, x]
    s2[y, x] = halo.boundary.repeat_edge(b1, bounds=[(0, 17), (0, 17)])[y, x]
    s3[y, x] = halo.cast(halo.int32, s2[y - 1, x]) * -5 + \
        halo.cast(halo.int32, s2[y, x]) * -5 + halo.cast(halo.int32, s2[y + 1, x])
    s4[y, x] = halo.max(halo.cast(halo.float32, s3[y, x]), halo.cast(halo.float32, x))
    s5[y, x] = (s4[y // 2, x // 2] + s4[(y + 1) // 2, (x + 1) // 2]) / 3.0
    s4.compute_root().fuse(y, x, yxf1).unroll(yxf1, 3)
    s3.compute_at(s4, yxf1).tile(y, x, yo1, xo2, yi3, xi4, 8, 3, tail="guard")
    s3.reorder(yi3, yo1)
    s2.compute_at(s3, yo1)
    b1.compute_at(s3, yi3)
    return in0, s5


def _run():
    in0, s5 = _pipeline()
    rng = np.random.default_rng(20261207000201)
    inputs = {in0: rng.integers(0, 256, (2, 5)).astype("uint8")}
    got = s5.realize((3, 19), inputs=inputs, origin=(-5, 0))
    want = halo.reference(s5, (3, 19), inputs=inputs, origin=(-5, 0))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_producer_is_computed_under_the_guard():
    """Each yo1 loop that produces s2 does so only where the guard holds: under an if
    inside it, or over a range cut to where the guard holds (it reads yi3, as the guard
    does: lower/hoist_guards.py)."""
    _, s5 = _pipeline()

    def guarded(loop: n.For) -> bool:
        under_if = any(isinstance(s, n.IfThenElse) and any(
            isinstance(p, n.ProducerConsumer) and p.name == "s2" for p in walk(s.then_case))
            for s in walk(loop.body))
        cut = any(isinstance(v, n.Var) and v.name.endswith(".yi3") for v in walk(loop.extent))
        return under_if or cut
    loops = [s for s in walk(s5.lower()) if isinstance(s, n.For) and s.name.endswith(".yo1")
             and any(isinstance(p, n.ProducerConsumer) and p.name == "s2"
                     for p in walk(s.body))]
    assert loops and all(guarded(loop) for loop in loops)


def test_it_runs_right():
    assert_survives_in_a_child("test_a_producer_in_a_reordered_guarded_tail")
