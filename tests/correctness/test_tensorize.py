"""Tensorized schedules compute what halo.reference and NumPy compute: each intrinsic of
`halo.intrinsics` on awkward sizes (1, primes, extents its tile doesn't divide, so both
the calls on whole tiles and the loops on the tails run), an intrinsic declared here
with its own emitter, and the quantized matmul app. Intrinsics the host can't run skip."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import halo
from apps import quantized_matmul
from halo import intrinsics
from halo.target import host_cpu

from .conftest import assert_matches_reference

y, x, yo, yi, xo, xi, ro, ri = halo.vars("y x yo yi xo xi ro ri")
FEATURES = host_cpu().features
needs_avx512vnni = pytest.mark.skipif("avx512vnni" not in FEATURES,
                                      reason="the host has no AVX-512 VNNI")
needs_avxvnni = pytest.mark.skipif("avxvnni" not in FEATURES, reason="the host has no AVX-VNNI")
needs_vnni = pytest.mark.skipif(not FEATURES & {"avx512vnni", "avxvnni"},
                                reason="the host has no VNNI")
needs_fma = pytest.mark.skipif("fma" not in FEATURES, reason="the host has no FMA")
SIZES = [(1, 1, 1), (5, 17, 13), (13, 70, 37)]  # (rows, columns, depth)


def _int8_matmul(rows: int, columns: int, groups: int, isa: str, pack: bool):
    """C[y, x] = sum_k int32(A[y, k]) * int32(W[k, x]) over packed weights: an input
    the caller packs (its strides known only at run time: the intrinsic reads rows of 4
    bytes one by one) or a Func packed in the pipeline (stride 4: one load per row)."""
    A = halo.ImageParam(halo.uint8, 2, "A")
    Bp = halo.ImageParam(halo.int8, 3, "Bp")
    groups_total = Bp.shape[0]
    if pack:
        q, k = halo.vars("q k")
        packed = halo.Func("packed")
        packed[q, x, k] = Bp[q, x, k]
        packed.compute_root()
        source = packed
    else:
        source = Bp
    r = halo.RDom((0, groups_total), (0, 4), name="r")
    C = halo.Func("C")
    C[y, x] = 0
    C[y, x] += halo.cast(halo.int32, A[y, 4 * r.x + r.y]) * \
        halo.cast(halo.int32, source[r.x, x, r.y])
    dot = intrinsics.dot_u8i8(rows, columns, groups, isa)
    C.split(y, yo, yi, rows).split(x, xo, xi, columns).reorder(yo, xo, yi, xi) \
        .tensorize(yi, dot)
    C.update(0).split(y, yo, yi, rows).split(x, xo, xi, columns).split(r.x, ro, ri, groups) \
        .reorder(yo, xo, ro, yi, xi, ri, r.y).tensorize(yi, dot)
    return A, Bp, C


def _int8_inputs(m: int, n: int, k: int):
    """A (m x 4g), the weights W (4g x n) and their packing (g x n x 4), g = ceil(k / 4)."""
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    groups = -(-k // 4)
    a = rng.integers(0, 256, (m, 4 * groups), dtype=np.uint8)
    w = rng.integers(-128, 128, (4 * groups, n), dtype=np.int8)
    packed = np.ascontiguousarray(w.reshape(groups, 4, n).transpose(0, 2, 1))
    return a, w, packed


@pytest.mark.parametrize("pack", [False, True], ids=["input", "packed"])
@pytest.mark.parametrize("isa", [pytest.param("avx512vnni", marks=needs_avx512vnni),
                                 pytest.param("avxvnni", marks=needs_avxvnni)])
@pytest.mark.parametrize("shape", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_dot_u8i8_matches_the_reference(isa, pack, shape):
    m, n, k = shape
    lanes = 16 if isa == "avx512vnni" else 8
    A, Bp, C = _int8_matmul(3, 2 * lanes, 2, isa, pack)
    a, w, packed = _int8_inputs(m, n, k)
    expected = a.astype(np.int32) @ w.astype(np.int32)
    assert_matches_reference(C, (m, n), {A: a, Bp: packed}, expected)


def _fma_matmul():
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    kk = halo.RDom((0, A.shape[1]), name="kk")
    C = halo.Func("C")
    C[y, x] = 0.0
    C[y, x] += A[y, kk] * B[kk, x]
    lanes = host_cpu().vector_bytes // 4
    micro = intrinsics.fma_outer_product(3, 2 * lanes, 4)
    C.split(y, yo, yi, 3).split(x, xo, xi, 2 * lanes).reorder(yo, xo, yi, xi) \
        .tensorize(yi, micro)
    C.update(0).split(y, yo, yi, 3).split(x, xo, xi, 2 * lanes).split(kk.x, ro, ri, 4) \
        .reorder(yo, xo, ro, yi, xi, ri).tensorize(yi, micro)
    return A, B, C


def _float_inputs(m: int, n: int, k: int):
    rng = np.random.default_rng(k)
    return rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)


@needs_fma
@pytest.mark.parametrize("shape", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_fma_outer_product_matches_the_reference(shape):
    m, n, k = shape
    A, B, C = _fma_matmul()
    a, b = _float_inputs(m, n, k)
    assert_matches_reference(C, (m, n), {A: a, B: b}, a @ b, rtol=1e-5, atol=1e-5)


@needs_fma
def test_fma_outer_product_under_strict_float_rounds_as_the_reference():
    """Every product and sum rounded, in the spec's order: the reference's bits."""
    A, B, C = _fma_matmul()
    a, b = _float_inputs(13, 70, 37)
    target = halo.Target("host", strict_float=True)
    got = C.realize((13, 70), inputs={A: a, B: b}, target=target)
    np.testing.assert_array_equal(got, halo.reference(C, (13, 70), inputs={A: a, B: b}))


# ------------------------------------------------------------ an intrinsic declared here


def _axpy8(emit):
    """spec[j] = a[j] * 3 + b[j] over 8 int32 lanes, with `emit`."""
    j = halo.Var("j")
    a = halo.ImageParam(halo.int32, 1, "a")
    b = halo.ImageParam(halo.int32, 1, "b")
    spec = halo.Func("axpy_spec")
    spec[j] = a[j] * 3 + b[j]
    spec.bound(j, 0, 8)
    return halo.Intrinsic("axpy8", spec, emit=emit)


def _emit_axpy(ctx) -> None:
    """The emitter a user writes: vector loads, IR builder arithmetic, a vector store."""
    from llvmlite import ir
    out, a, b = ctx.operand("axpy_spec"), ctx.operand("a"), ctx.operand("b")
    three = ir.Constant(ir.VectorType(ir.IntType(32), 8), [3] * 8)
    value = ctx.builder.add(ctx.builder.mul(ctx.load(a, 0, lanes=8), three),
                            ctx.load(b, 0, lanes=8))
    ctx.store(out, value, 0)


def _axpy_pipeline(intrinsic, transposed: bool = False):
    P = halo.ImageParam(halo.int32, 2, "P")
    Q = halo.ImageParam(halo.int32, 2, "Q")
    f = halo.Func("f")
    f[y, x] = P[y, x + 1] * 3 + (Q[x, y] if transposed else Q[y, x])
    f.split(x, xo, xi, 8, tail="guard").tensorize(xi, intrinsic)
    return P, Q, f


@pytest.mark.parametrize("shape", [(1, 1), (3, 8), (7, 29)])
def test_an_intrinsic_declared_by_the_user(shape):
    P, Q, f = _axpy_pipeline(_axpy8(_emit_axpy))
    rng = np.random.default_rng(shape[1])
    p = rng.integers(-1000, 1000, (shape[0], shape[1] + 1), dtype=np.int32)
    q = rng.integers(-1000, 1000, shape, dtype=np.int32)
    assert_matches_reference(f, shape, {P: p, Q: q}, p[:, 1:] * 3 + q)


@pytest.mark.skipif("avx2" not in FEATURES, reason="the host has no AVX2")
def test_an_emitter_in_inline_assembly():
    """vpaddd in inline assembly: what reaches the register is what the spec adds."""
    def emit(ctx) -> None:
        from llvmlite import ir
        out, a, b = ctx.operand("axpy_spec"), ctx.operand("a"), ctx.operand("b")
        vector = ir.VectorType(ir.IntType(32), 8)
        av = ctx.load(a, 0, lanes=8)
        tripled = ctx.inline_asm("vpaddd $1, $1, $0\n\tvpaddd $1, $0, $0", "=&x,x", vector,
                                 [av])
        ctx.store(out, ctx.inline_asm("vpaddd $2, $1, $0", "=x,x,x", vector,
                                      [tripled, ctx.load(b, 0, lanes=8)]), 0)
    P, Q, f = _axpy_pipeline(_axpy8(emit))
    p = np.arange(2 * 17, dtype=np.int32).reshape(2, 17)
    q = np.ones((2, 16), np.int32)
    assert_matches_reference(f, (2, 16), {P: p, Q: q}, p[:, 1:] * 3 + 1)
    assert "vpaddd" in f.compile().function.assembly()


def test_an_emitter_that_fails_names_the_intrinsic():
    def emit(ctx) -> None:
        ctx.operand("c")
    P, Q, f = _axpy_pipeline(_axpy8(emit))
    with pytest.raises(halo.ScheduleError) as info:
        f.compile()
    assert str(info.value) == ("intrinsic axpy8: its emitter asked for operand 'c'; its "
                               "spec's buffers are axpy_spec, a, b")


def test_an_emitter_raising_a_python_error_is_reported():
    def emit(ctx) -> None:
        raise ValueError("no")
    P, Q, f = _axpy_pipeline(_axpy8(emit))
    with pytest.raises(halo.ScheduleError) as info:
        f.compile()
    assert str(info.value) == ("intrinsic axpy8: its emitter for the emit part failed on the "
                               "LLVM backend: ValueError('no')")


def test_a_transposed_access_runs_the_loops_instead_of_a_wrong_call():
    """Q[x, y] where the spec reads b[j] along x: refused, never a wrong answer."""
    P, Q, f = _axpy_pipeline(_axpy8(_emit_axpy), transposed=True)
    with pytest.raises(halo.ScheduleError, match="don't compute what axpy8's spec"):
        f.compile()


# ------------------------------------------------------------ the quantized matmul app


@functools.cache
def _app():
    A, W, out, funcs = quantized_matmul.algorithm()
    quantized_matmul.schedule(funcs)
    return A, W, out, funcs, out.compile()


@needs_vnni
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 13, 5), (37, 101, 131), (40, 96, 64),
                                   (17, 97, 300), (1100, 50, 600)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_quantized_matmul_app_matches_numpy_and_the_reference(shape):
    m, n, k = shape
    A, W, out, funcs, kernel = _app()
    inputs = quantized_matmul.make_inputs(m, n, k, seed=k)
    scale, zero_point = 1.0 / (64 * k), 128
    got = kernel((m, n), **inputs, scale=scale, zero_point=zero_point)
    expected = quantized_matmul.numpy_version(inputs["A"], inputs["W"], scale, zero_point)
    np.testing.assert_array_equal(got, expected)
    if m * n > 1:
        assert 0 < got.mean() < 255  # requantized into range, not saturated
    reference = halo.reference(out, (m, n), inputs={A: inputs["A"], W: inputs["W"],
                                                    funcs["scale"]: scale,
                                                    funcs["zero_point"]: zero_point})
    np.testing.assert_array_equal(got, reference)
