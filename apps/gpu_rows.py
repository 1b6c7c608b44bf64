"""A GPU schedule shared by the stencil apps (unsharp, harris): a Func computed per block
by rows of threads that span its columns and walk down its region."""
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
