"""A long chain of stages nests the lowered IR deeper than Python's default recursion
limit (found by the fuzzer as a RecursionError from bounds inference, a raw traceback
from deep inside the compiler)."""
from __future__ import annotations

import numpy as np

import halo


def test_a_sixty_stage_stencil_chain_lowers_compiles_and_matches_the_reference():
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.boundary.repeat_edge(inp)
    for k in range(60):
        g = halo.Func(f"s{k}")
        g[y, x] = (f[y, x - 1] + f[y, x] + f[y + 1, x]) * 0.25
        g.compute_root()
        f = g
    a = np.random.default_rng(0).random((7, 11), dtype=np.float32)
    got = f.realize((7, 11), inputs={inp: a})
    np.testing.assert_allclose(got, halo.reference(f, (7, 11), inputs={inp: a}),
                               rtol=1e-5, atol=1e-6)
