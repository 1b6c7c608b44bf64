"""A 3x3 convolution layer with bias and ReLU, NCHW: the core of a CNN.

    relu[n, co, y, x] = max(0, bias[co] + sum_{ci, ky, kx}
                            weights[co, ci, ky, kx] * input[n, ci, y + ky - 1, x + kx - 1])

with zero padding of one pixel (`halo.boundary.constant_exterior`), so the output has the
input's height and width. Sizes are ResNet's second stage: batch 1, 64 -> 64 channels,
56x56. Run `python -m apps.conv_relu`.

The schedule is the register-blocked direct convolution of Halide's apps/conv_layer, for
the NCHW layout (where x, not the channel, is contiguous):

- The zero-padded input is computed once at root, so the `select` of the boundary
  condition runs once per input pixel instead of once per multiply-add.
- The output is cut into blocks of 4 output channels x 2 rows x one SIMD vector of
  columns (16 floats with AVX-512, 8 with AVX2). The convolution of one block is
  computed right there (`compute_at` the block), with the reduction over (ci, ky, kx)
  outside the fully unrolled block, so the block's 8 vector accumulators stay in
  registers while every input vector loaded is reused for 4 output channels and every
  broadcast weight for 2 rows. 64 = 16 x 4 and 56 = 28 x 2, so blocks tile the channels
  and rows exactly; the columns' last block shifts inwards.
- The 16 blocks of output channels run in parallel.

conv is computed per block of relu, whose splits are shift_inwards: when the output is at
least a block in every dimension, halo knows every block is whole, so conv's region is
a constant 4 x 2 x vector and its loops unroll and vectorize as written.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import halo
from apps.numpy_check import check_and_time

CHANNEL_BLOCK, ROW_BLOCK = 4, 2


def algorithm():
    """Returns (image, weights, bias, relu, {name: Func or RDom})."""
    n, co, y, x = halo.vars("n co y x")
    image = halo.ImageParam(halo.float32, 4, "image")      # [n, ci, y, x]
    weights = halo.ImageParam(halo.float32, 4, "weights")  # [co, ci, ky, kx]
    bias = halo.ImageParam(halo.float32, 1, "bias")        # [co]
    padded = halo.boundary.constant_exterior(image, 0.0)
    r = halo.RDom((0, image.shape[1]), (0, 3), (0, 3), name="r")  # ci, ky, kx
    conv = halo.Func("conv")
    conv[n, co, y, x] = bias[co]
    conv[n, co, y, x] += weights[co, r.x, r.y, r.z] * \
        padded[n, r.x, y + r.y - 1, x + r.z - 1]
    relu = halo.Func("relu")
    relu[n, co, y, x] = halo.max(conv[n, co, y, x], 0.0)
    return image, weights, bias, relu, {"relu": relu, "conv": conv, "padded": padded,
                                        "r": r, "image": image}


def vector() -> int:
    """The block's columns: one vector of float32 on this CPU."""
    return halo.Target("host").natural_vector_size(halo.float32)


def schedule(funcs) -> None:
    """Blocks of 4 channels x 2 rows x a vector of columns, accumulated in registers; see
    above."""
    n, co, y, x, coo, coi, yo, yi, xo, xi = halo.vars("n co y x coo coi yo yi xo xi")
    relu, conv, padded, r = funcs["relu"], funcs["conv"], funcs["padded"], funcs["r"]
    relu.split(co, coo, coi, CHANNEL_BLOCK).split(y, yo, yi, ROW_BLOCK) \
        .split(x, xo, xi, vector()).reorder(n, coo, yo, xo, coi, yi, xi) \
        .vectorize(xi).unroll(yi).unroll(coi).parallel(coo)
    conv.compute_at(relu, xo).vectorize(x).unroll(y).unroll(co)
    conv.update(0).reorder(n, r.x, r.y, r.z, co, y, x).vectorize(x).unroll(y).unroll(co)
    padded.compute_root().parallel(padded.args[1]).vectorize(padded.args[3], vector())


# `gpu_schedule`'s tilings of small batches, smallest first: (the most images, the
# arguments that differ). Where a batch's blocks of the large tiling don't fill the GPU,
# blocks of fewer channels and threads of fewer registers: more blocks, each with more
# threads (on an H200: the second faster from 2 to 4 images, slower from 6; the first,
# with twice the blocks again, faster at one image; docs/gpu.md).
SMALL_BATCHES = ((1, {"channels": 16, "rows": 2, "registers": (2, 4)}),
                 (4, {"channels": 16, "registers": (2, 8)}))


def gpu_schedule(funcs, channels: int = 32, rows: int = 4, columns: int = 56,
                 depth: int = 16, registers: tuple[int, int] = (4, 7), stages: int = 2,
                 small_batches: Sequence[tuple[int, dict]] = SMALL_BATCHES) -> None:
    """For target 'cuda', as an implicit matrix multiply (the pattern of matmul's
    `gpu_schedule`): a block computes `channels` output channels x `rows` x `columns`
    pixels of one image (the grid: images, channel blocks, pixel tiles); each thread
    accumulates `registers` (channels, neighbouring columns) in registers (conv stored
    "local" at the block loop: each thread keeps its own part) across the whole
    reduction, which runs `depth` input channels at a time: per step, the block's threads
    copy the zero-padded input window (`depth` x rows + 2 x columns + 2) into shared
    memory, then each thread runs its 9 x `depth` x registers multiply-adds, the weights
    read through L1 (every lane of a warp reads the same weight; staging them in shared
    memory too measured slower). The grid has a block per image too, so a batch fills
    the GPU; a batch of at most `most` images, for the first (most, arguments) of
    `small_batches` it is within, runs another tiling instead (`specialize` on the
    image's batch extent): these arguments with `arguments`, whose blocks are smaller
    and more. With `stages` > 1 (the default 2) the window is
    double-buffered: the next steps' windows are copied (asynchronously, zeros outside
    the image) while this one is read. The defaults fit ResNet's 56 x 56 layers (a row
    of the image a row of a block's tile; any width runs, in tiles of 56 shifted
    inwards); on an H200 they measured fastest of the tilings tried at batch 1 and 32
    (docs/gpu.md)."""
    relu, conv, padded = funcs["relu"], funcs["conv"], funcs["padded"]
    tile, cio = halo.vars("tile cio")  # (loops of every branch: `_tile` makes them)
    conv.compute_at(relu, tile).store_in("local")
    padded.compute_at(conv.update(0), cio).store_in("shared")
    if stages > 1:
        padded.double_buffer(stages)
    tiling = {"channels": channels, "rows": rows, "columns": columns, "depth": depth,
              "registers": registers}
    # (specialized first: copies of the stages' plain loops; a bound, not `== 1`, which
    # would pin the extent in that branch's code: the kernel then indexed the image
    # without the batch, and ptxas gave it 55 registers where it gives the same code with
    # the batch 80, 15% slower)
    for most, arguments in small_batches:
        small = funcs["image"].shape[0] <= most
        _tile(funcs, lambda stage, small=small: stage.specialize(small),
              **{**tiling, **arguments})
    _tile(funcs, lambda stage: stage, **tiling)


def _tile(funcs, branch, channels: int, rows: int, columns: int, depth: int,
          registers: tuple[int, int]) -> None:
    """`gpu_schedule`'s loops of each stage, as `branch(stage)` (the stage, or one of its
    specializations) has them."""
    n, co, y, x = halo.vars("n co y x")
    coo, coi, yo, yi, xo, xi, ct, cv, xt, xv = halo.vars("coo coi yo yi xo xi ct cv xt xv")
    cio, cii, c, ys, yt, xs, tile = halo.vars("cio cii c ys yt xs tile")
    relu, conv, padded, r = funcs["relu"], funcs["conv"], funcs["padded"], funcs["r"]
    rc, rx = registers
    branch(relu).split(co, coo, coi, channels).split(y, yo, yi, rows) \
        .split(x, xo, xi, columns).split(coi, ct, cv, rc).split(xi, xt, xv, rx) \
        .reorder(n, coo, yo, xo, ct, yi, xt, cv, xv).fuse(yo, xo, tile) \
        .gpu_blocks(n, coo, tile).gpu_threads(ct, yi, xt).unroll(cv).unroll(xv)
    branch(conv).split(co, ct, cv, rc, tail="guard").split(x, xt, xv, rx, tail="guard") \
        .reorder(n, ct, y, xt, cv, xv).gpu_threads(ct, y, xt).unroll(cv).unroll(xv)
    branch(conv.update(0)).split(r.x, cio, cii, depth).split(co, ct, cv, rc) \
        .split(x, xt, xv, rx) \
        .reorder(n, cio, ct, y, xt, cii, r.y, r.z, cv, xv).gpu_threads(ct, y, xt) \
        .unroll(r.y).unroll(r.z).unroll(cv).unroll(xv)
    image_c, image_y, image_x = padded.args[1:]
    branch(padded).split(image_x, xs, xt, columns // rx).split(image_y, ys, yt, rows) \
        .reorder(image_c, ys, xs, yt, xt).split(image_c, c, cii, channels // rc) \
        .reorder(c, ys, xs, cii, yt, xt).gpu_threads(cii, yt, xt)


# The largest batch `gpu_schedule_small_batch` is meant for: on an H200 its default was
# faster than `gpu_schedule` and cuDNN at 1 and 2 images (larger batches were measured
# only with earlier tilings: slower than `gpu_schedule` at 32; docs/gpu.md).
SMALL_BATCH = 2


def gpu_schedule_small_batch(funcs, channels: int = 32, columns: int = 56, depth: int = 32,
                             registers: tuple[int, int] = (4, 7), groups: int = 4,
                             stages: int = 2) -> None:
    """For target 'cuda', for a batch of one or two images (`SMALL_BATCH`), whose blocks of
    `gpu_schedule` leave most of the GPU's warp slots empty: the reduction over input
    channels is split among `groups` groups of the block's threads too (`rfactor`), so a
    block has `groups` times the threads. A block computes `channels` output channels x one
    row x `columns` pixels; each step of `depth` input channels, its threads copy the
    zero-padded input window (`depth` x 3 x `columns` + 2, double-buffered with `stages` >
    1) into shared memory, and the thread of group g, tile t accumulates `registers`
    (channels, neighbouring columns) of its `depth / groups` channels in registers (the
    intermediate `conv_intm_local`, 1 / `groups` of the sums), across the whole reduction.
    At the end each thread writes its partial sums to shared memory (`conv_intm`) and the
    threads of one group add up the `groups` partials of each output (conv, in registers),
    with the bias, for relu. Any size runs (tiles of `columns` shift inwards, channel tails
    are guarded); at 1 and 2 images of ResNet's 56 x 56 layers it measured faster than
    `gpu_schedule` and cuDNN on an H200 (docs/gpu.md). Picks: the (`groups` x `channels /
    registers[0]` x `columns / registers[1]`) threads of a block are at most 1024, and
    `depth` is a multiple of `groups`."""
    n, co, y, x = halo.vars("n co y x")
    coo, coi, xo, xi, ct, cv, xt, xv, tile = halo.vars("coo coi xo xi ct cv xt xv tile")
    cio, cii, u, ciu, g, c, ck, cz, cy, xs = halo.vars("cio cii u ciu g c ck cz cy xs")
    relu, conv, padded, r = funcs["relu"], funcs["conv"], funcs["padded"], funcs["r"]
    rc, rx = registers

    def threads(stage, co, x, *outer):
        """The (channel, column) register tiles of `stage` over the block's threads (`outer`
        outside them, the group `g` first among the threads where given)."""
        stage.split(co, ct, cv, rc, tail="guard").split(x, xt, xv, rx, tail="guard")
        return stage.reorder(*outer, ct, xt, cv, xv).unroll(cv).unroll(xv)

    relu.split(co, coo, coi, channels).split(x, xo, xi, columns) \
        .split(coi, ct, cv, rc).split(xi, xt, xv, rx) \
        .reorder(n, coo, y, xo, ct, xt, cv, xv).fuse(y, xo, tile) \
        .gpu_blocks(n, coo, tile).gpu_threads(ct, xt).unroll(cv).unroll(xv)
    conv.compute_at(relu, tile).store_in("local")
    threads(conv, co, x, n, y).gpu_threads(ct, xt)
    merge = conv.update(0)
    merge.split(r.x, cio, cii, depth).split(cii, u, ciu, depth // groups)
    partial = merge.rfactor(u, g)  # partial[g, n, co, y, x]: group g's sums
    threads(merge, co, x, n, y).reorder(n, y, ct, xt, u, cv, xv).unroll(u) \
        .gpu_threads(ct, xt)
    local = partial.cache_write("local")
    partial.compute_at(relu, tile)  # (in shared memory: read by other threads)
    threads(partial, partial.args[2], partial.args[4], n, y, g).gpu_threads(g, ct, xt)
    local.compute_at(relu, tile).store_in("local")
    threads(local, co, x, n, y, g).gpu_threads(g, ct, xt)
    update = threads(local.update(0), co, x, n, y, cio, g)
    update.reorder(n, y, cio, g, ct, xt, ciu, r.y, r.z, cv, xv).gpu_threads(g, ct, xt) \
        .unroll(r.y).unroll(r.z)
    padded.compute_at(update, cio).store_in("shared")
    if stages > 1:
        padded.double_buffer(stages)
    image_c, image_y, image_x = padded.args[1:]
    padded.split(image_x, xs, xt, columns // rx).split(image_c, c, ck, depth) \
        .split(ck, cz, cy, channels // rc).reorder(c, image_y, xs, cz, cy, xt) \
        .gpu_threads(cz, cy, xt)


def gpu_schedule_direct(funcs) -> None:
    """For target 'cuda', without shared memory: a block per image, 4 output channels and
    8 x 32 pixels; each thread accumulates its 4 channels of one pixel in registers
    (conv computed inside the thread loops, its channels unrolled), reading the image
    and weights through L1."""
    n, co, y, x, coo, coi, yo, yi, xo, xi, t = halo.vars("n co y x coo coi yo yi xo xi t")
    relu, conv, r = funcs["relu"], funcs["conv"], funcs["r"]
    relu.split(co, coo, coi, 4).tile(y, x, yo, xo, yi, xi, 8, 32)
    relu.reorder(n, coo, yo, xo, yi, xi, coi).fuse(yo, xo, t)
    relu.gpu_blocks(n, coo, t).gpu_threads(yi, xi).unroll(coi)
    conv.compute_at(relu, xi).unroll(co)
    conv.update(0).reorder(n, r.x, r.y, r.z, co, y, x).unroll(co)


def numpy_conv_relu(image: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """im2col + one matrix multiply per image: out[co, y*x] = W[co, ci*9] @ cols[ci*9, y*x]."""
    batch, channels, height, width = image.shape
    padded = np.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    # windows[n, ci, y, x, ky, kx] -> cols[n, ci*9 + ky*3 + kx, y*width + x]
    cols = windows.transpose(0, 1, 4, 5, 2, 3).reshape(batch, channels * 9, height * width)
    out = weights.reshape(weights.shape[0], -1) @ cols + bias[:, None]
    return np.maximum(out, 0).reshape(batch, -1, height, width)


def make_inputs(shape=(1, 64, 64, 56, 56), seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs by ImageParam name for (batch, in channels, out channels, height, width)."""
    batch, c_in, c_out, height, width = shape
    rng = np.random.default_rng(seed)
    scale = np.float32(1 / np.sqrt(9 * c_in))  # keeps the outputs O(1), half of them < 0
    return {"image": rng.standard_normal((batch, c_in, height, width), dtype=np.float32),
            "weights": rng.standard_normal((c_out, c_in, 3, 3), dtype=np.float32) * scale,
            "bias": rng.standard_normal(c_out, dtype=np.float32) * np.float32(0.1)}


def main(shape=(1, 64, 64, 56, 56), repeats: int = 5) -> dict:
    batch, c_in, c_out, height, width = shape
    *_, out, funcs = algorithm()
    schedule(funcs)
    row = check_and_time("conv_relu", "x".join(map(str, shape)), out.compile(),
                         (batch, c_out, height, width), make_inputs(shape), numpy_conv_relu,
                         repeats, rtol=1e-4, atol=1e-4)
    flops = 2 * batch * c_out * height * width * c_in * 9
    return {**row, "halo_gflops": flops / row["halo_s"] / 1e9}

if __name__ == "__main__":
    print(main())
