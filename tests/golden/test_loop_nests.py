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


def rfactor_total():
    """The example of `rfactor`'s docstring, the intermediate's loop u in parallel."""
    g = halo.ImageParam(halo.float32, 2, "g")
    r = halo.RDom(g, name="r")
    f = halo.Func("f")
    f[()] = 0.0
    f[()] += g[r.x, r.y]
    f.update(0).rfactor(r.x, halo.Var("u")).compute_root().update(0).parallel("u")
    return f


def rfactor_histogram():
    """A histogram's rows split in blocks of 8, one partial histogram per block in
    parallel, merged with vectors over the bins."""
    image = halo.ImageParam(halo.uint8, 2, "image")
    r = halo.RDom(image, name="r")
    b, u, ro, ri = halo.vars("b u ro ri")
    hist = halo.Func("hist")
    hist[b] = 0
    hist[halo.cast(halo.int32, image[r.x, r.y])] += 1
    hist.update(0).split(r.x, ro, ri, 8)
    intm = hist.update(0).rfactor(ro, u)
    intm.compute_root().update(0).parallel(u)
    hist.update(0).reorder(ro, b).vectorize(b, 8)
    return hist


def atomic_histogram():
    """The example of `atomic`'s docstring: a scatter in parallel with atomic updates."""
    g = halo.ImageParam(halo.int32, 1, "g")
    r = halo.RDom(g, name="r")
    h = halo.Func("h")
    h[x] = 0
    h[halo.clamp(g[r], 0, 255)] += 1
    h.update(0).atomic().parallel(r.x)
    return h


def allow_races_scatter():
    """The example of `allow_race_conditions`'s docstring: every write stores 1."""
    g = halo.ImageParam(halo.int32, 1, "g")
    r = halo.RDom(g, name="r")
    f = halo.Func("f")
    f[x] = 0
    f[halo.clamp(g[r], 0, 99)] = 1
    f.update(0).allow_race_conditions().parallel(r.x)
    return f


def _matmul():
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    C = halo.Func("C")
    C[y, x] = 0.0
    C[y, x] += A[y, k] * B[k, x]
    return B, C, k


def cache_read_panel():
    """A packed panel of B per column tile of C (the cache stage of an input)."""
    B, C, k = _matmul()
    Bp = B.cache_read("global", readers=[C])
    C.update(0).split(x, xo, xi, 8, tail="guard").reorder(xo, y, k.x, xi)
    Bp.compute_at(C.update(0), xo)
    return C


def cache_write_tile():
    """C's 4x8 tile accumulated in a stack buffer, then copied out."""
    B, C, k = _matmul()
    CL = C.cache_write("local")
    C.tile(y, x, yo, xo, yi, xi, 4, 8)
    CL.compute_at(C, xo)
    CL.update(0).reorder(k.x, y, x)
    return C


def specialize_width():
    """The vectorized nest when the width is a multiple of 8, the plain one otherwise."""
    bx, by = blur()
    inp = next(d for d in bx.definitions[0].deps if isinstance(d, halo.ImageParam))
    by.specialize(inp.shape[1] % 8 == 2).vectorize(x, 8)
    bx.compute_at(by, y)
    return by


CASES = {"tiled_compute_at": tiled_compute_at, "sliding_store_at": sliding_store_at,
         "matmul_update": matmul_update, "rfactor_total": rfactor_total,
         "rfactor_histogram": rfactor_histogram, "atomic_histogram": atomic_histogram,
         "allow_races_scatter": allow_races_scatter,
         "sliding_window_blur": sliding_window_blur, "cache_read_panel": cache_read_panel,
         "cache_write_tile": cache_write_tile, "specialize_width": specialize_width}


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
