"""Quantized matrix multiply: uint8 activations x int8 weights -> int32, requantized to
uint8, tensorized onto the CPU's int8 dot-product instruction (`vpdpbusd`, AVX-512 VNNI or
AVX-VNNI, through `halo.intrinsics.dot_u8i8`).

    acc[y, x] = sum_k int32(A[y, k]) * int32(W[k, x])
    out[y, x] = uint8(clamp(round(acc[y, x] * scale) + zero_point, 0, 255))

The instruction multiplies 4 consecutive k at once, so the weights are packed in groups
of 4 along k (`packed[q, x, k] = W[4q + k, x]`, zeros past K), as a quantized inference
library packs them once per model; A is padded with zeros to a multiple of 4 columns.
Algorithm, a hand schedule, and NumPy. Run `python -m apps.quantized_matmul`.
"""
from __future__ import annotations

import numpy as np

import halo
from apps.numpy_check import check_and_time
from halo import intrinsics


def algorithm():
    """Returns (A, W, out, {name: Func, RDom or Param}) as the module docstring says."""
    y, x, k, q = halo.vars("y x k q")
    A = halo.ImageParam(halo.uint8, 2, "A")
    W = halo.ImageParam(halo.int8, 2, "W")
    scale = halo.Param(halo.float32, "scale", 1.0)
    zero_point = halo.Param(halo.int32, "zero_point", 0)
    depth = A.shape[1]
    A_padded, packed = halo.Func("A_padded"), halo.Func("packed")
    A_padded[y, k] = halo.select(k < depth, A[y, halo.min(k, depth - 1)], halo.cast(halo.uint8, 0))
    packed[q, x, k] = halo.select(4 * q + k < depth, W[halo.min(4 * q + k, depth - 1), x],
                                  halo.cast(halo.int8, 0))
    r = halo.RDom((0, (depth + 3) // 4), (0, 4), name="r")
    acc, out = halo.Func("acc"), halo.Func("out")
    acc[y, x] = 0
    acc[y, x] += halo.cast(halo.int32, A_padded[y, 4 * r.x + r.y]) * \
        halo.cast(halo.int32, packed[r.x, x, r.y])
    scaled = halo.round(halo.cast(halo.float32, acc[y, x]) * scale)
    out[y, x] = halo.cast(halo.uint8, halo.clamp(halo.cast(halo.int32, scaled) + zero_point,
                                                 0, 255))
    return A, W, out, {"A_padded": A_padded, "packed": packed, "acc": acc, "out": out,
                       "r": r, "scale": scale, "zero_point": zero_point}


def blocking() -> tuple[int, int, int, int]:
    """(rows, columns) of the intrinsic's register tile, the 4-byte groups of k per call
    (512 k: the tile is loaded and stored once per 512 k), and the rows of a parallel
    task's tile: 8 x 48 int32 (24 of AVX-512's 32 registers), or 4 x 24 with AVX-VNNI's
    16. A task of 1,024 rows packs its panel of weights once for all of them: at 1024^3
    on the 2-core Xeon (2 threads) 1,027 GOP/s against 943 with tasks of 256 rows and
    groups of 64 (docs/schedule.md); at 512^3 fewer, larger tasks balance worse on two
    cores (588 against 717)."""
    wide = "avx512vnni" in halo.target.host_cpu().features
    rows, columns = (8, 48) if wide else (4, 24)
    return rows, columns, 128, 1024


def schedule(funcs) -> None:
    """out is cut into tiles of 1,024 rows x `columns`, one per parallel task, the tiles
    of a column panel one after another; acc is computed per tile, its initialization and
    its reduction both tensorized by the intrinsic's register tile (the reduction by 128
    groups of 4 k per call, which keeps the tile in registers across them). The 512 k of
    a call are the outer loop of acc's update, and per step the weights they read are
    packed there (`packed` computed at that loop: 128 x 48 x 4 bytes, 24 KB, contiguous),
    so every register tile of the task reads them from the L1 cache, one row of 192
    bytes per group (packed once at root, the weights' rows are a whole matrix row apart,
    a new page per group: 25-40% slower on an AVX-512 Xeon). out requantizes the tile in
    vectors; A is padded once, at root."""
    y, x, yo, xo, yi, xi, t, ro, ri = halo.vars("y x yo xo yi xi t ro ri")
    rows, columns, groups, tile_rows = blocking()
    dot = intrinsics.dot_u8i8(rows, columns, groups)
    out, acc, r, packed = funcs["out"], funcs["acc"], funcs["r"], funcs["packed"]
    lanes = 16 if columns % 16 == 0 else 8
    funcs["A_padded"].compute_root().parallel(y).vectorize(funcs["A_padded"].args[1], lanes)
    out.tile(y, x, yo, xo, yi, xi, tile_rows, columns).reorder(xo, yo, yi, xi)
    out.fuse(xo, yo, t).parallel(t).vectorize(xi, lanes)
    acc.compute_at(out, t)
    acc.split(y, yo, yi, rows).split(x, xo, xi, columns).reorder(yo, xo, yi, xi) \
        .tensorize(yi, dot)
    update = acc.update(0).split(y, yo, yi, rows).split(x, xo, xi, columns) \
        .split(r.x, ro, ri, groups).reorder(ro, yo, xo, yi, xi, ri, r.y).tensorize(yi, dot)
    packed.compute_at(update, ro).bound(packed.args[2], 0, 4)


def numpy_version(A: np.ndarray, W: np.ndarray, scale: float = 1.0,
                  zero_point: int = 0) -> np.ndarray:
    acc = A.astype(np.int32) @ W.astype(np.int32)
    scaled = np.round(acc.astype(np.float32) * np.float32(scale)).astype(np.int32)
    return np.clip(scaled + zero_point, 0, 255).astype(np.uint8)


def make_inputs(m: int, n: int, k: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"A": rng.integers(0, 256, (m, k), dtype=np.uint8),
            "W": rng.integers(-128, 128, (k, n), dtype=np.int8)}


def main(n: int = 512, repeats: int = 3) -> dict:
    inputs = {**make_inputs(n, n, n), "scale": 1.0 / n, "zero_point": 128}
    *_, out, funcs = algorithm()
    schedule(funcs)
    row = check_and_time("quantized_matmul", f"{n}^3", out.compile(), (n, n), inputs,
                         numpy_version, repeats)
    return {**row, "halo_gops": 2 * n**3 / row["halo_s"] / 1e9}


if __name__ == "__main__":
    print(main())
