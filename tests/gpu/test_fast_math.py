"""Target('cuda', fast_math=True): approximate math on the GPU, within its documented
bound, and different from the default's (so the option reaches the compiler)."""
import numpy as np

import halo
from apps import softmax

RNG = np.random.default_rng(11)


def test_exp_is_within_its_bound():
    """exp(x) within 2 + 1.2 |x| ulp of the exact value (Target's docstring), for x where
    float32's exp is a normal number."""
    x = halo.Var("x")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = halo.exp(inp[x])
    xo, xi = halo.vars("xo xi")
    f.gpu_tile(x, xo, xi, 128)
    data = RNG.uniform(-80, 80, 100_003).astype(np.float32)
    target = halo.Target("cuda", fast_math=True)
    fast = f.realize(data.shape, inputs={inp: data}, target=target).astype(np.float64)
    exact = np.exp(data.astype(np.float64))
    ulp = np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(fast - exact) <= (2 + 1.2 * np.abs(data) + 1) * ulp)
    default = f.realize(data.shape, inputs={inp: data}, target="cuda").astype(np.float64)
    assert np.all(np.abs(default - exact) <= 2 * ulp)
    assert not np.array_equal(fast, default)


def test_softmax_with_fast_math_matches_the_reference():
    x, out, funcs = softmax.algorithm()
    softmax.gpu_schedule(funcs)
    data = RNG.standard_normal((37, 1000)).astype(np.float32) * 3
    fast = out.realize(data.shape, inputs={x: data}, target=halo.Target("cuda", fast_math=True))
    np.testing.assert_allclose(fast, halo.reference(out, data.shape, inputs={x: data}),
                               rtol=2e-5, atol=1e-9)
