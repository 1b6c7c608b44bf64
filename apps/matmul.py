"""Matrix multiply C = A @ B through an RDom.

Algorithm, a hand schedule (register-blocked tiles, as a BLAS kernel does), and NumPy.
Run `python -m apps.matmul`.
"""
from __future__ import annotations

import numpy as np

import halo
from apps.numpy_check import check_and_time
from halo import intrinsics


def algorithm():
    """Returns (A, B, C, {name: Func, RDom or input}) with C[i, j] = sum_k A[i, k] * B[k, j]."""
    i, j = halo.vars("i j")
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    C = halo.Func("C")
    C[i, j] = 0.0
    C[i, j] += A[i, k] * B[k, j]
    return A, B, C, {"C": C, "k": k, "A": A, "B": B}


def blocking() -> tuple[int, int, int]:
    """(rows, columns) of a block for this CPU and the blocks of a parallel task: a block
    is rows x 3 vectors of accumulators, 24 of AVX-512's 32 registers (8 x 48 floats) or
    12 of AVX2's 16 (4 x 24); a task takes up to 128 blocks of rows (1024 rows with
    AVX-512)."""
    lanes = halo.Target("host").natural_vector_size(halo.float32)
    rows = 8 if lanes >= 16 else 4
    return rows, 3 * lanes, 128


def schedule(funcs) -> None:
    """A register-blocked schedule over packed panels of B, as a BLAS kernel is: C is cut
    into column panels `columns` wide and blocks of `rows` rows; a parallel task takes up
    to 128 blocks of one panel (the last task of a panel fewer: a guarded tail, so any
    C of at least a block is whole blocks), the tasks of a panel one after another. Each
    task first copies the panel of B it reads (all of k x `columns`: 192 KB at 1024 with
    AVX-512) into a contiguous buffer, B_panel (`cache_read`), so that its blocks read it
    row after row from the L2 cache rather than a whole matrix row (a page, at 1024)
    apart: on an AVX-512 Xeon, 4-8x faster than reading B in place. Each block (8 x 48
    with AVX-512) accumulates in a `cache_write("local")` stage, C_local, whose update runs
    k outermost over the block: per k, 8 values of A (broadcast) times 3 vectors of a row
    of the panel, added into 24 vector accumulators that LLVM keeps in registers (the
    block is a constant size on the stack, every access at a constant offset once i and j
    are unrolled). C then copies the block out.

    Blocks and panels shift inwards, so any C of at least a block is whole blocks, and
    halo then gives the block its constant size; smaller outputs run a clamped version.
    """
    i, j = halo.vars("i j")
    io, jo, ib, ii, ji, iii, t = halo.vars("io jo ib ii ji iii t")
    C, k, B = funcs["C"], funcs["k"], funcs["B"]
    rows, columns, blocks = blocking()
    lanes = columns // 3
    C_local = C.cache_write("local")
    B_panel = B.cache_read("global", [C_local])
    C.split(j, jo, ji, columns).split(i, ib, iii, rows).split(ib, io, ii, blocks, tail="guard")
    C.reorder(jo, io, ii, iii, ji).fuse(jo, io, t).parallel(t)
    C.vectorize(ji, lanes).unroll(ji).unroll(iii)
    C_local.compute_at(C, ii).vectorize(j, lanes).unroll(i)
    C_local.update(0).reorder(k.x, i, j).vectorize(j, lanes).unroll(j).unroll(i)
    B_panel.compute_at(C, t).vectorize(B_panel.args[1], lanes)


def gpu_schedule(funcs, tile: int = 128, register_tile: int = 8, depth: int = 16,
                 stages: int = 2, a_by_column: bool = True) -> None:
    """For target 'cuda': a `tile` x `tile` block of C per GPU block of 16 x 16 threads
    (tile / register_tile each way), each thread accumulating a `register_tile` square in
    registers across the whole k loop, with A's and B's panels staged in shared memory
    `depth` steps of k at a time (the SGEMM pattern):

    * C_local (`cache_write("local")`) is computed at the block loop and stored in
      registers: its stages and C's copy-out give every thread the same part (the same
      `register_tile` split of the same thread loops, guarded tails), so each thread
      keeps its own part (`lower/block_registers.py`);
    * its update runs k in steps of `depth`; per step, the block's threads copy an A
      panel (tile x depth) and a B panel (depth x tile) into shared memory, then each
      thread runs the step's `depth` x `register_tile`^2 multiply-adds unrolled (CUDA
      reads the panels four floats at a time).

    With `stages` > 1 the panels are double-buffered (`double_buffer(stages)`: the next
    step's panels are copied while this step's are read); with `a_by_column` A's panel is
    stored k-major (`reorder_storage`), so a thread's `register_tile` values of A at one k
    are adjacent (vector loads from shared memory), and, double-buffered, each thread
    copies A four values of k at a time where it can (`_copy_by_rows_of_four`: a
    vectorized load from global memory). Both are on by default: on an H200 they take
    4096^3 from 34.7 to 41.2 TFLOP/s (docs/gpu.md).
    C's tiles shift inwards, so any C of at least a tile is whole tiles."""
    i, j = halo.vars("i j")
    io, jo, ii, ji, iv, jv, ty, tx, ko, ki = halo.vars("io jo ii ji iv jv ty tx ko ki")
    C, k, A, B = funcs["C"], funcs["k"], funcs["A"], funcs["B"]
    r = register_tile
    C_local = C.cache_write("local")
    C.tile(i, j, io, jo, ii, ji, tile, tile).split(ii, ty, iv, r).split(ji, tx, jv, r)
    C.reorder(io, jo, ty, tx, iv, jv).gpu_blocks(io, jo).gpu_threads(ty, tx)
    C.unroll(iv).unroll(jv)
    C_local.compute_at(C, jo)
    C_local.split(i, ty, iv, r, tail="guard").split(j, tx, jv, r, tail="guard")
    C_local.reorder(ty, tx, iv, jv).gpu_threads(ty, tx).unroll(iv).unroll(jv)
    update = C_local.update(0)
    update.split(k, ko, ki, depth).split(i, ty, iv, r).split(j, tx, jv, r)
    update.reorder(ko, ty, tx, ki, iv, jv).gpu_threads(ty, tx)
    update.unroll(ki).unroll(iv).unroll(jv)
    threads = tile // r
    rows, columns, rt, ct = halo.vars("rows columns rt ct")
    A_panel, B_panel = A.cache_read("shared", [C_local]), B.cache_read("shared", [C_local])
    if a_by_column:
        A_panel.reorder_storage(*reversed(A_panel.args))
    # (with one copy of the panels, the loads by four measured slower: 29.3 TFLOP/s
    # against 36.7 at 4096^3, whose copies are then synchronous)
    by_four = a_by_column and stages > 1 and _copy_by_rows_of_four(A_panel, tile, threads,
                                                                     depth)
    for panel in (B_panel,) if by_four else (A_panel, B_panel):
        row, column = panel.args
        panel.split(row, rows, rt, threads).split(column, columns, ct, threads)
        panel.reorder(rows, columns, rt, ct).gpu_threads(rt, ct).unroll(rows).unroll(columns)
    for panel in (A_panel, B_panel):
        panel.compute_at(update, ko)
        if stages > 1:
            panel.double_buffer(stages)


def _copy_by_rows_of_four(A_panel, tile: int, threads: int, depth: int) -> bool:
    """Schedule the copy of A's k-major panel (`tile` rows x `depth` columns of k) by the
    block's `threads` x `threads` threads four columns at a time, if `depth` allows it: a
    thread's four adjacent values are one 16-byte load, a warp's loads whole 32-byte
    sectors of `depth // 4` groups of rows, and the rows are copied in passes of
    `threads**2 // (depth // 4)`. Whether it did (else the copy is left to the caller)."""
    groups = depth // 4
    if depth < 4 or depth % 4 or threads % groups or tile % (threads * threads // groups):
        return False
    row, column = A_panel.args
    ro, ri, rhi, rlo, kc, kv, t = halo.vars("ro ri rhi rlo kc kv t")
    A_panel.split(column, kc, kv, 4).split(row, ro, ri, threads * threads // groups)
    A_panel.split(ri, rhi, rlo, threads // groups).reorder(ro, rhi, rlo, kc, kv)
    A_panel.fuse(rlo, kc, t).gpu_threads(rhi, t).unroll(ro).vectorize(kv)
    return True


def gpu_schedule_vthread(funcs) -> None:
    """64 x 64 tiles of C per block of 16 x 16 threads, each thread's 4 x 4 points
    strided by 16 (virtual threads), so a warp's loads of B and stores of C are
    unit-stride; each thread accumulates its points in registers (a
    `cache_write("local")` stage computed inside the thread loops), reading A and B
    through the caches."""
    i, j = halo.vars("i j")
    io, jo, ii, ji, vi, vj, ty, tx = halo.vars("io jo ii ji vi vj ty tx")
    C, k = funcs["C"], funcs["k"]
    C_local = C.cache_write("local")
    C.tile(i, j, io, jo, ii, ji, 64, 64).split(ii, vi, ty, 16).split(ji, vj, tx, 16)
    C.reorder(io, jo, vi, vj, ty, tx)
    C.gpu_blocks(io, jo).vthread(vi).vthread(vj).gpu_threads(ty, tx)
    C_local.compute_at(C, tx)
    C_local.update(0).reorder(k.x, i, j)


def algorithm_fp16(product=None, k_step: int | None = None, out=halo.float32):
    """Returns (A, B, C, {name: Func, RDom or input}) with C[i, j] = sum_k float32(A[i, k])
    * float32(B[k, j]): float16 inputs, float32 sums (what tensor cores compute); or
    with `product(a, b)` of the two float16 values as the term summed. With `k_step`, k
    runs to the next multiple of it, over A and B padded with zeros (the same sums):
    a schedule's k steps of `k_step` have no tail. With `out=halo.float16`, C is the
    sums rounded to float16 (what cuBLAS's and PyTorch's fp16 matmul return), computed
    by the Func "acc"; else "acc" is C. "A_in" and "B_in" name what C reads (the padded
    Funcs, or A and B)."""
    i, j = halo.vars("i j")
    A = halo.ImageParam(halo.float16, 2, "A")
    B = halo.ImageParam(halo.float16, 2, "B")
    A_in, B_in, extent = A, B, A.shape[1]
    if k_step is not None:
        zero = halo.cast(halo.float16, 0)
        A_in, B_in = (halo.boundary.constant_exterior(x, zero) for x in (A, B))
        extent = (A.shape[1] + (k_step - 1)) // k_step * k_step
    k = halo.RDom((0, extent), name="k")
    acc = halo.Func("C" if out == halo.float32 else "acc")
    acc[i, j] = halo.cast(halo.float32, 0.0)
    if product is None:
        acc[i, j] += halo.cast(halo.float32, A_in[i, k]) * halo.cast(halo.float32, B_in[k, j])
    else:
        acc[i, j] += product(A_in[i, k], B_in[k, j])
    C = acc
    if out != halo.float32:
        C = halo.Func("C")
        C[i, j] = halo.cast(out, acc[i, j])
    return A, B, C, {"C": C, "acc": acc, "k": k, "A": A, "B": B, "A_in": A_in, "B_in": B_in}


def _accumulators(funcs, memory: str):
    """The stage that holds C's float32 sums in `memory` at C's block loop (placed there by
    the caller): a `cache_write` of C, or for a float16 C, the Func "acc" it rounds."""
    C, acc = funcs["C"], funcs["acc"]
    return C.cache_write(memory) if acc is C else acc.store_in(memory)


def gpu_schedule_tensor_core(funcs, block: tuple[int, int] = (128, 128),
                             warp: tuple[int, int] = (64, 64), depth: int = 64,
                             stages: int = 3) -> None:
    """For target 'cuda', on `algorithm_fp16`: tensor cores (`halo.intrinsics.mma_f16_f32`).
    Each block computes a `block` tile of C, one `warp` tile per warp, with the warps'
    accumulators in their registers across the whole k loop: C_acc (a `cache_write("local")`
    stage at the block loop, every access a warp's tensor call) is a warp array
    (`lower/block_registers.py`), zeroed and updated by the intrinsic and copied out by
    `halo.intrinsics.mma_f32_store` (rounded to float16 on the way for
    `algorithm_fp16(out=halo.float16)`, whose "acc" is then that stage). Each step of
    `depth` along k, the block's threads copy its A and B panels to shared memory
    (`cache_read("shared")` at that loop, 16 bytes a thread at a time), `stages` steps in
    flight (`double_buffer`; 3 stages of 64 take 107 KB of shared memory, which the kernel
    asks for at launch), from where the warps load fragments (`ldmatrix`); each warp loads
    the first fragments of its next step before it multiplies the last of this one, and
    issues the copies between its first multiplies (`lower/pipeline_tensor_calls.py`). For C
    of 2048 x 2048 and more, blocks of 256 x 128 (8 warps) in 4 stages are faster on sm_90
    (217 KB of its 227; docs/gpu.md). C's tiles shift inwards, so any C of at least a block
    is whole tiles, and k must be whole steps of `depth` (a warp array can't take the
    element-by-element loops of a tail): other sizes are refused before running
    (`BoundsError`); for any k, pad it (`algorithm_fp16(k_step=depth)`, whose panel copies
    are slower: they test each element). Below about 2048 x 2048, blocks of 128 x 64 (warps
    of 64 x 32, k steps of 64 in 3 stages) keep more of the GPU busy."""
    i, j = halo.vars("i j")
    io, jo, ii, ji, wi, wj, ti, tj, ko, ki = halo.vars("io jo ii ji wi wj ti tj ko ki")
    C = funcs["C"]
    warps = (block[0] // warp[0], block[1] // warp[1])
    mma = intrinsics.mma_f16_f32(warp[0], warp[1], depth)
    C_acc = _accumulators(funcs, "local")
    C.tile(i, j, io, jo, ii, ji, *block).gpu_blocks(io, jo)
    C.tile(ii, ji, wi, wj, ti, tj, *warp).gpu_threads(wi, wj)
    C.tensorize(ti, intrinsics.mma_f32_store(*warp, out=C.type))
    C_acc.compute_at(C, jo)
    C_acc.tile(i, j, wi, wj, ti, tj, *warp).gpu_threads(wi, wj).tensorize(ti, mma)
    update = C_acc.update(0)
    update.split(funcs["k"], ko, ki, depth).tile(i, j, wi, wj, ti, tj, *warp)
    update.reorder(ko, wi, wj, ti, tj, ki).gpu_threads(wi, wj).tensorize(ti, mma)
    for panel, shape in ((funcs["A_in"].cache_read("shared", [C_acc]), (block[0], depth)),
                         (funcs["B_in"].cache_read("shared", [C_acc]), (depth, block[1]))):
        panel.compute_at(update, ko)
        _copied_by_threads(panel, warps, shape)
        if stages > 1:
            panel.double_buffer(stages)


def gpu_schedule_tensor_core_shared(funcs, block: tuple[int, int] = (64, 64),
                                    warp: tuple[int, int] = (32, 32), depth: int = 64) -> None:
    """For target 'cuda', on `algorithm_fp16` of any sizes: tensor cores, with the
    accumulators in shared memory between calls (slower than `gpu_schedule_tensor_core`,
    which needs C of at least a block and k padded). Each block computes a `block` tile
    of C, accumulated in shared memory (C_shared, a
    `cache_write("shared")` stage computed at the block loop), one `warp` tile per warp:
    the update's loops bound to threads number the warps, and each call of the intrinsic
    runs a warp's `warp` tile over `depth` steps of k with its accumulators in registers.
    Each step of `depth` along k, the block's threads copy its A and B panels to shared
    memory (`cache_read("shared")` at that loop), from where the warps load fragments.
    C's tiles shift inwards, so any C of at least a block is whole tiles; a k that isn't
    a multiple of `depth` leaves a last step that lane 0 of each warp computes alone."""
    i, j = halo.vars("i j")
    io, jo, ii, ji, wi, wj, ti, tj, ko, ki, ty, tz, tx, r, rr, t, ru, cu = halo.vars(
        "io jo ii ji wi wj ti tj ko ki ty tz tx r rr t ru cu")
    C, A, B = funcs["C"], funcs["A_in"], funcs["B_in"]
    warps = (block[0] // warp[0], block[1] // warp[1])
    mma = intrinsics.mma_f16_f32(warp[0], warp[1], depth)
    C_shared = _accumulators(funcs, "shared")

    def threads(stage, rows, columns, shape) -> None:
        """The block's threads (tz, ty: a warp; tx: its lanes) over a 2-D stage of
        `shape` (at most), each thread's loads unrolled so they are in flight together."""
        stage.split(columns, r, tx, 32).split(rows, rr, t, warps[0] * warps[1])
        stage.split(t, tz, ty, warps[1])
        stage.split(rr, rr, ru, max(1, shape[0] // (warps[0] * warps[1])))
        stage.split(r, r, cu, max(1, shape[1] // 32))
        stage.reorder(tz, ty, tx, rr, r, ru, cu).gpu_threads(tz, ty, tx).unroll(ru).unroll(cu)

    C.tile(i, j, io, jo, ii, ji, *block).gpu_blocks(io, jo)
    threads(C, ii, ji, block)
    C_shared.compute_at(C, jo)
    C_shared.tile(i, j, wi, wj, ti, tj, *warp).gpu_threads(wi, wj).tensorize(ti, mma)
    update = C_shared.update(0)
    update.split(funcs["k"], ko, ki, depth).tile(i, j, wi, wj, ti, tj, *warp)
    update.reorder(ko, wi, wj, ti, tj, ki).gpu_threads(wi, wj).tensorize(ti, mma)
    for stage, shape in ((A.cache_read("shared", [C_shared]), (block[0], depth)),
                         (B.cache_read("shared", [C_shared]), (depth, block[1]))):
        stage.compute_at(update, ko)
        threads(stage, *stage.args, shape)


def _copied_by_threads(panel, warps: tuple[int, int], shape: tuple[int, int]) -> None:
    """A 2-D shared panel of `shape` float16 (at most) copied by a block of `warps` warps,
    8 of them (16 bytes) a thread at a time: along x, a warp's lanes take 32 / (its
    columns / 8) rows of 16 bytes, consecutive lanes in consecutive rows; the warps take
    the rest of the rows, each thread's copies unrolled so they are in flight together.
    (Every split has a constant factor: their divisions are by constants.)"""
    row, column = panel.args
    c, v, r, rt, t, tx, ty, tz, rep = halo.vars("c v r rt t tx ty tz rep")
    chunks = shape[1] // 8
    panel.split(column, c, v, 8).split(row, r, rt, max(1, 32 // chunks))
    panel.reorder(r, c, rt, v).fuse(c, rt, t).split(t, t, tx, 32)
    panel.split(r, r, ty, warps[1]).split(r, rep, tz, warps[0])
    panel.reorder(tz, ty, tx, rep, t, v).gpu_threads(tz, ty, tx).unroll(rep).unroll(t)
    panel.vectorize(v)


def main(n: int = 512, repeats: int = 3) -> dict:
    rng = np.random.default_rng(0)
    inputs = {"A": rng.random((n, n), dtype=np.float32),
              "B": rng.random((n, n), dtype=np.float32)}
    *_, C, funcs = algorithm()
    schedule(funcs)
    row = check_and_time("matmul", f"{n}^3", C.compile(), (n, n), inputs,
                         lambda A, B: A @ B, repeats, rtol=1e-4, atol=1e-3)
    return {**row, "halo_gflops": 2 * n**3 / row["halo_s"] / 1e9}

if __name__ == "__main__":
    print(main())
