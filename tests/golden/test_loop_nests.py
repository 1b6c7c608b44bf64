"""Golden snapshots of lowered loop nests: the printer is a contract, and so is the shape
of the loops each schedule produces. Run `pytest tests/golden --update-golden` after an
intended change, and review the diff."""
from __future__ import annotations

from pathlib import Path

import pytest

import halo

SNAPSHOTS = Path(__file__).parent / "snapshots"
y, x, yo, xo, yi, xi = halo.vars("y x yo xo yi xi")


def blur():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    bx, by = halo.Func("blur_x"), halo.Func("blur_y")
    bx[y, x] = inp[y, x] + inp[y, x + 1] + inp[y, x + 2]
    by[y, x] = bx[y, x] + bx[y + 1, x] + bx[y + 2, x]
    return bx, by


def tiled_compute_at():
    bx, by = blur()
    by.tile(y, x, yo, xo, yi, xi, 8, 32).vectorize(xi, 8)
    bx.compute_at(by, xo)
    return by


def sliding_store_at():
    bx, by = blur()
    by.split(y, yo, yi, 16)
    bx.store_at(by, yo).compute_at(by, yi)
    return by


def sliding_window_blur():
    """The issue's blur: blur_x slides over the rows of each 32-row strip of out, its
    storage folded to 4 rows."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    clamped = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = (clamped[y, x - 1] + clamped[y, x] + clamped[y, x + 1]) / 3
    out[y, x] = (bx[y - 1, x] + bx[y, x] + bx[y + 1, x]) / 3
    out.split(y, yo, yi, 32)
    bx.store_at(out, yo).compute_at(out, yi)
    return out


def matmul_update():
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    C = halo.Func("C")
    C[y, x] = 0.0
    C[y, x] += A[y, k] * B[k, x]
    C.update(0).reorder(y, k.x, x).split(x, xo, xi, 4, tail="guard").unroll(xi)
    return C


CASES = {"tiled_compute_at": tiled_compute_at, "sliding_store_at": sliding_store_at,
         "matmul_update": matmul_update, "sliding_window_blur": sliding_window_blur}


@pytest.mark.parametrize("case", sorted(CASES))
def test_loop_nest_snapshot(case, request):
    """The lowered IR of this schedule prints exactly as the snapshot."""
    text = str(CASES[case]().lower())
    path = SNAPSHOTS / f"{case}.txt"
    if request.config.getoption("--update-golden") or not path.exists():
        path.write_text(text)
        if not request.config.getoption("--update-golden"):
            pytest.fail(f"no snapshot existed; wrote {path.name}: review and commit it")
    assert text == path.read_text()
