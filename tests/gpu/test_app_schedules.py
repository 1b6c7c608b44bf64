"""Each app's GPU schedule (gpu_schedule in apps/) on awkward sizes, against
halo.reference."""
import numpy as np
import pytest

import halo
from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("shape", [(1, 1), (37, 71), (64, 130)])
def test_blur(shape):
    inp, out, funcs = blur.algorithm()
    blur.gpu_schedule(funcs)
    image = RNG.random(shape, dtype=np.float32)
    np.testing.assert_allclose(out.realize(shape, inputs={inp: image}, target="cuda"),
                               halo.reference(out, shape, inputs={inp: image}), rtol=1e-5)


@pytest.mark.parametrize("schedule", [
    matmul.gpu_schedule, matmul.gpu_schedule_vthread,
    lambda f: matmul.gpu_schedule(f, tile=64, register_tile=4),
    lambda f: matmul.gpu_schedule(f, tile=32, register_tile=4, depth=8, stages=1,
                                  a_by_column=False),
    lambda f: matmul.gpu_schedule(f, tile=32, register_tile=4, depth=8, a_by_column=False),
    lambda f: matmul.gpu_schedule(f, tile=32, register_tile=4, depth=4, stages=3),
    lambda f: matmul.gpu_schedule(f, tile=32, register_tile=4, depth=8, stages=1),
], ids=["shared128", "vthread", "shared64", "shared32", "double_buffered", "three_stages",
        "transposed_panel"])
@pytest.mark.parametrize(("n", "k", "m"), [(1, 1, 1), (67, 13, 45), (128, 64, 192),
                                           (131, 37, 257), (300, 33, 129)])
def test_matmul(n, k, m, schedule):
    """(a schedule is applied to the algorithm's Funcs by name)"""
    A, B, C, funcs = matmul.algorithm()
    schedule(funcs)
    inputs = {A: RNG.random((n, k), dtype=np.float32), B: RNG.random((k, m), dtype=np.float32)}
    np.testing.assert_allclose(C.realize((n, m), inputs=inputs, target="cuda"),
                               halo.reference(C, (n, m), inputs=inputs), rtol=1e-4)


@pytest.mark.parametrize("shape", [(1, 1), (5, 300), (3, 1024)])
@pytest.mark.parametrize("schedule", [
    softmax.gpu_schedule,
    lambda f: softmax.gpu_schedule(f, rows=4, unroll=3),
    softmax.gpu_schedule_partials,
], ids=["warps", "warps_4_rows", "partials"])
def test_softmax(shape, schedule):
    x, out, funcs = softmax.algorithm()
    schedule(funcs)
    data = RNG.standard_normal(shape).astype(np.float32) * 3
    np.testing.assert_allclose(out.realize(shape, inputs={x: data}, target="cuda"),
                               halo.reference(out, shape, inputs={x: data}), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("shape", [(1, 1), (13, 300)])
def test_histogram(shape):
    image, hist, funcs = histogram.algorithm()
    histogram.gpu_schedule(funcs)
    data = RNG.integers(0, 256, shape).astype(np.uint8)
    np.testing.assert_array_equal(
        hist.realize((histogram.BINS,), inputs={image: data}, target="cuda"),
        halo.reference(hist, (histogram.BINS,), inputs={image: data}))


STENCIL_TILES = [{}, {"rows": 16, "columns": 32, "thread_rows": 3},
                 {"rows": 5, "columns": 7, "thread_rows": 2}]
STENCIL_IDS = ["default", "rows_not_dividing", "small_tiles"]


@pytest.mark.parametrize("tile", STENCIL_TILES, ids=STENCIL_IDS)
@pytest.mark.parametrize("shape", [(3, 1, 1), (3, 19, 45), (3, 70, 131)])
def test_unsharp(shape, tile):
    image, out, funcs = unsharp.algorithm()
    unsharp.gpu_schedule(funcs, **tile)
    data = RNG.random(shape, dtype=np.float32) + 0.1
    np.testing.assert_allclose(out.realize(shape, inputs={image: data}, target="cuda"),
                               halo.reference(out, shape, inputs={image: data}), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("tile", STENCIL_TILES, ids=STENCIL_IDS)
@pytest.mark.parametrize("shape", [(3, 1, 1), (3, 21, 50), (3, 71, 130)])
def test_harris(shape, tile):
    image, out, funcs = harris.algorithm()
    harris.gpu_schedule(funcs, **tile)
    data = RNG.random(shape, dtype=np.float32)
    size = shape[1:]
    np.testing.assert_allclose(out.realize(size, inputs={image: data}, target="cuda"),
                               halo.reference(out, size, inputs={image: data}), rtol=1e-3,
                               atol=1e-5)


@pytest.mark.parametrize("schedule", [
    conv_relu.gpu_schedule, conv_relu.gpu_schedule_direct,
    lambda f: conv_relu.gpu_schedule(f, channels=16, rows=2, columns=16, depth=4,
                                     registers=(4, 8)),
    lambda f: conv_relu.gpu_schedule(f, registers=(4, 8)),
    lambda f: conv_relu.gpu_schedule(f, stages=2),
    lambda f: conv_relu.gpu_schedule(f, channels=16, rows=2, columns=16, depth=4,
                                     registers=(4, 8), stages=3),
    lambda f: conv_relu.gpu_schedule(f, small_batches=()),
    conv_relu.gpu_schedule_small_batch,
    lambda f: conv_relu.gpu_schedule_small_batch(f, channels=8, columns=16, depth=8,
                                                 registers=(2, 4), groups=4, stages=1)],
    ids=["shared", "direct", "shared_small_tiles", "registers_4_8", "double_buffered",
         "three_stages", "one_tiling", "small_batch", "small_batch_small_tiles"])
@pytest.mark.parametrize(("batch", "ci", "co", "h", "w"),
                         [(1, 1, 1, 1, 1), (2, 3, 6, 7, 33), (1, 13, 37, 9, 40),
                          (5, 3, 17, 6, 58)])
def test_conv_relu(batch, ci, co, h, w, schedule):
    image, weights, bias, relu, funcs = conv_relu.algorithm()
    schedule(funcs)
    inputs = {image: RNG.standard_normal((batch, ci, h, w)).astype(np.float32),
              weights: RNG.standard_normal((co, ci, 3, 3)).astype(np.float32),
              bias: RNG.standard_normal(co).astype(np.float32)}
    shape = (batch, co, h, w)
    np.testing.assert_allclose(relu.realize(shape, inputs=inputs, target="cuda"),
                               halo.reference(relu, shape, inputs=inputs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sizes", [{}, {"block": (64, 128), "depth": 32}, {"depth": 32},
                                   {"block": (64, 128), "warp": (32, 64), "depth": 32}],
                         ids=["64x64x64", "64x128x32", "64x64x32", "warps32x64"])
@pytest.mark.parametrize(("n", "k", "m"), [(64, 32, 64), (97, 80, 131), (70, 45, 200),
                                           (1, 16, 1)])
def test_matmul_tensor_core_shared(n, k, m, sizes):
    """Accumulators in shared memory: whole tiles, tiles shifted inwards, a k tail that
    lane 0 computes, C smaller than a block; against the reference (float32 sums of
    float16 products) and PyTorch."""
    A, B, C, funcs = matmul.algorithm_fp16()
    matmul.gpu_schedule_tensor_core_shared(funcs, **sizes)
    _check_fp16_matmul(A, B, C, n, k, m)


@pytest.mark.parametrize("sizes", [{}, {"warp": (64, 32), "depth": 64, "stages": 3},
                                   {"stages": 2}, {"depth": 32, "stages": 4},
                                   {"block": (64, 128), "warp": (32, 32), "depth": 32},
                                   {"block": (128, 64), "warp": (64, 32), "depth": 64,
                                    "stages": 3},
                                   {"depth": 16, "stages": 1}],
                         ids=["128x128-64x64-k64x3", "warps64x32-k64x3", "k64x2", "k32x4",
                              "64x128-32x32-k32x3", "128x64-64x32-k64x3", "k16-1stage"])
@pytest.mark.parametrize(("n", "k", "m", "padded"), [
    (128, 64, 128, False), (131, 64, 257, False), (131, 45, 257, True), (300, 1, 129, True)])
def test_matmul_tensor_core_in_registers(n, k, m, padded, sizes):
    """Accumulators in the warps' registers (a warp array): whole tiles, tiles shifted
    inwards, k of whole steps, or padded to them (k = 1 too)."""
    depth = sizes.get("depth", 64)
    A, B, C, funcs = matmul.algorithm_fp16(k_step=depth if padded else None)
    matmul.gpu_schedule_tensor_core(funcs, **sizes)
    _check_fp16_matmul(A, B, C, n, k, m)


@pytest.mark.parametrize(("sizes", "n", "k", "m", "padded"), [
    ({"block": (256, 128), "depth": 64, "stages": 4}, 300, 640, 257, False),
    ({"block": (256, 128), "depth": 64, "stages": 4}, 256, 192, 131, False),
    ({"block": (256, 128), "depth": 64, "stages": 4}, 263, 45, 128, True),
    ({"depth": 48}, 131, 480, 257, False), ({"depth": 48}, 131, 50, 130, True)],
    ids=["256x128-k64x4-10steps", "256x128-k64x4-3steps", "256x128-k64x4-padded",
         "k48-10steps", "k48-padded"])
def test_matmul_tensor_core_k_loops_pipelined_or_not(sizes, n, k, m, padded):
    """Blocks of 8 warps whose k loops are pipelined across steps (a steady state, and
    fewer steps than stages), and k steps of 48, which the intrinsic leaves as they were
    (an odd number of steps of 16): the barrier at the end of each step instead."""
    A, B, C, funcs = matmul.algorithm_fp16(k_step=sizes["depth"] if padded else None)
    matmul.gpu_schedule_tensor_core(funcs, **sizes)
    _check_fp16_matmul(A, B, C, n, k, m)


@pytest.mark.parametrize(("schedule", "sizes"), [
    (matmul.gpu_schedule_tensor_core, {}),
    (matmul.gpu_schedule_tensor_core, {"block": (256, 128), "depth": 64, "stages": 4}),
    (matmul.gpu_schedule_tensor_core_shared, {})], ids=["registers", "256x128", "shared"])
@pytest.mark.parametrize(("n", "k", "m"), [(256, 64, 128), (263, 192, 257), (257, 640, 131)])
def test_matmul_tensor_core_with_a_float16_output(schedule, sizes, n, k, m):
    """C rounded to float16 (as PyTorch's fp16 matmul returns it): whole tiles, tiles
    shifted inwards (C of one 256 x 128 block or more). The reference rounds float32
    sums taken in another order, which may differ from the GPU's by k float32 roundings
    of the terms' magnitudes: apart by at most that and one float16 step."""
    A, B, C, funcs = matmul.algorithm_fp16(out=halo.float16)
    schedule(funcs, **sizes)
    a = (RNG.random((n, k)) - 0.5).astype(np.float16)
    b = (RNG.random((k, m)) - 0.5).astype(np.float16)
    inputs = {A: a, B: b}
    out = C.realize((n, m), inputs=inputs, target="cuda")
    assert out.dtype == np.float16
    expected = halo.reference(C, (n, m), inputs=inputs)
    orders = k * 2.0**-24 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    step = np.spacing(np.abs(expected)).astype(np.float64)
    assert np.all(np.abs(out.astype(np.float64) - expected) <= step + orders)
    torch = pytest.importorskip("torch")
    theirs = (torch.from_numpy(a).cuda() @ torch.from_numpy(b).cuda()).cpu().numpy()
    np.testing.assert_allclose(out, theirs, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(("n", "k", "m", "needs"), [
    (100, 64, 200, "every shift_inwards tile around it whole"),
    (128, 45, 128, "every call of mma_f16_f32_64x64x64 on a whole tile")])
def test_sizes_the_register_tiles_cant_take_are_refused_before_running(n, k, m, needs):
    A, B, C, funcs = matmul.algorithm_fp16()
    matmul.gpu_schedule_tensor_core(funcs)
    a, b = np.ones((n, k), np.float16), np.ones((k, m), np.float16)
    with pytest.raises(halo.BoundsError, match=r"the schedule keeps C_local in the registers "
                                               r"of its warps \(a warp array\), which needs "
                                               + needs):
        C.realize((n, m), inputs={A: a, B: b}, target="cuda")


@pytest.mark.parametrize(("view", "twin"), [
    ("whole", True), ("rows 8 apart", True), ("rows 1 apart", False),
    ("start 1 element in", False), ("start 8 elements in", True)])
def test_matmul_tensor_core_on_views_takes_the_aligned_twin_only_where_it_may(view, twin):
    """A's rows and start as a view of a wider array give them; the aligned kernel runs
    only where both are multiples of 16 bytes (else the general one, whose copies test
    their addresses), and both give the reference's result."""
    torch = pytest.importorskip("torch")
    n, k, m = 128, 128, 256
    A, B, C, funcs = matmul.algorithm_fp16()
    matmul.gpu_schedule_tensor_core(funcs)
    a = (RNG.random((n, k)) - 0.5).astype(np.float16)
    b = (RNG.random((k, m)) - 0.5).astype(np.float16)
    pad, start = {"whole": (0, 0), "rows 8 apart": (8, 0), "rows 1 apart": (1, 0),
                  "start 1 element in": (0, 1), "start 8 elements in": (0, 8)}[view]
    wide = torch.zeros(n * (k + pad) + start, dtype=torch.float16, device="cuda")
    a_view = wide[start:].view(n, k + pad)[:, :k]
    a_view.copy_(torch.from_numpy(a))
    kernel = C.compile(target="cuda")
    out = torch.empty(n, m, device="cuda")
    pipeline, chosen = kernel.function, []
    variant = pipeline._variant
    pipeline._variant = lambda v: chosen.append(variant(v)) or chosen[-1]
    kernel(out=out, A=a_view, B=torch.from_numpy(b).cuda())
    assert chosen == [twin]
    assert twin in pipeline._functions  # (the module it ran, built when first needed)
    np.testing.assert_allclose(out.cpu().numpy(), halo.reference(C, (n, m), inputs={A: a, B: b}),
                               rtol=1e-3, atol=1e-3)


def _check_fp16_matmul(A, B, C, n, k, m):
    a = (RNG.random((n, k)) - 0.5).astype(np.float16)
    b = (RNG.random((k, m)) - 0.5).astype(np.float16)
    inputs = {A: a, B: b}
    out = C.realize((n, m), inputs=inputs, target="cuda")
    np.testing.assert_allclose(out, halo.reference(C, (n, m), inputs=inputs), rtol=1e-3,
                               atol=1e-3)
    torch = pytest.importorskip("torch")
    expected = (torch.from_numpy(a).cuda().float() @ torch.from_numpy(b).cuda().float())
    np.testing.assert_allclose(out, expected.cpu().numpy(), rtol=1e-3, atol=1e-3)
