"""A GPU schedule shared by the stencil apps (unsharp, harris): tiles of the output a
block, and the Funcs computed per block, each by rows of threads that span its columns
and walk down its region."""
from __future__ import annotations

import halo


def rows_of_threads(f: halo.Func, thread_rows: int) -> halo.Func:
    """`f` (a 2-D Func [y, x] computed at a block) by `thread_rows` rows of threads: each
    thread computes every `thread_rows`-th row of its column of the region. The block's
    threads span the region's width (with its margins), not its height, so a tall tile
    doesn't need a thread per point."""
    y, x = f.args
    yo, yi = halo.vars("yo yi")
    return f.split(y, yo, yi, thread_rows).reorder(yo, yi, x).gpu_threads(yi, x)


def tiles_by_rows_of_threads(output: halo.Func, rows: int, columns: int, thread_rows: int,
                             inner: tuple[halo.Var, ...] = ()) -> tuple[halo.Var, halo.Var]:
    """`output` (its last two dimensions [y, x]) in tiles of `rows` x `columns` a block,
    `thread_rows` rows of threads a block, each thread computing every `thread_rows`-th
    row of its column of the tile (`inner`: loops of the other dimensions, inside x).
    Returns the block loop of x (where the producers are computed) and the thread loop of
    x."""
    y, x = output.args[-2:]
    yo, xo, yi, xi, ys, yt = halo.vars("yo xo yi xi ys yt")
    output.split(y, yo, yi, rows).split(x, xo, xi, columns) \
        .split(yi, ys, yt, thread_rows).reorder(yo, xo, ys, yt, xi, *inner) \
        .gpu_blocks(yo, xo).gpu_threads(yt, xi)
    return xo, xi
