"""sliding_window: a Func stored outside a serial loop and computed inside it computes,
after the first iteration, only the part of its region the previous iteration didn't.

The pass is checked three ways: the rewritten bound in the IR (before/expected), the
number of values each Func computes (an instrumented build, `Target(count_stores=True)`),
and the results against `halo.reference` on awkward sizes.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import halo
from halo.ir import nodes as n

from .conftest import evaluate, lets_of, lower_until, nodes_of

y, x, yo, yi = halo.vars("y x yo yi")
COUNTING = halo.Target("host", count_stores=True)


def blur(taps=(-1, 0, 1), split=32, parallel=False, slide=True):
    """The issue's blur: out split into strips of `split` rows, blur_x stored per strip
    and computed per row; `taps` are the rows of blur_x that a row of out reads."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = (c[y, x - 1] + c[y, x] + c[y, x + 1]) / 3
    out[y, x] = sum(bx[y + t, x] for t in taps) / len(taps)
    out.split(y, yo, yi, split)
    if parallel:
        out.parallel(yi)
    bx.compute_at(out, yi).store_at(out, yo if slide else yi)
    return inp, out


def run_both(inp, out, shape, target="host"):
    img = np.random.default_rng(sum(shape)).random(shape, dtype=np.float32)
    kernel = out.compile(target)
    got = kernel(shape, inp=img)
    np.testing.assert_allclose(got, halo.reference(out, shape, inputs={inp: img}),
                               rtol=1e-5, atol=1e-6)
    return kernel


def strip_starts(height: int, split: int) -> list[int]:
    """First row of each strip of a shift_inwards split (the last strip shifts inwards;
    a strip taller than the image starts above it)."""
    return [min(k * split, height - split) for k in range(-(-height // split))]


def test_the_bound_after_the_first_iteration_starts_past_the_previous_maximum():
    """produce blur_x computes rows [slide_min, max] where slide_min is the full min at
    yi == 0 and the previous iteration's max + 1 afterwards."""
    _, out = blur()
    stmt, ctx = lower_until(out, "sliding_window")
    assert {w.loop for w in ctx.sliding_windows["blur_x"]} == {"out.s0.y.yi"}
    # (out's whole-strip nest and its clamped one each slide blur_x; with 100 rows, both
    # compute the same rows)
    slides = [s for s in nodes_of(stmt, n.LetStmt) if s.name == "blur_x.s0.y.slide_min"]
    assert len(slides) == 2
    for slide in slides:
        loops = [lp for lp in nodes_of(slide.body, n.For) if lp.name == "blur_x.s0.y"]
        assert loops and loops[0].min == n.Var("blur_x.s0.y.slide_min")
        lets = lets_of(stmt)
        values = {"out.min.0": 0, "out.extent.0": 100, "out.s0.y.yo": 1}
        for i in (0, 1, 5, 31):
            at = {**values, "out.s0.y.yi": i}
            row = 32 + i
            expected = row - 1 if i == 0 else row + 1
            assert evaluate(slide.value, at, lets) == expected
            assert evaluate(n.Var("blur_x.s0.y.max"), at, lets) == row + 1


@pytest.mark.parametrize("height,split", [(100, 32), (97, 32), (64, 32), (33, 32),
                                          (7, 32), (1, 32), (1, 1), (13, 5), (2, 3)])
def test_each_row_of_blur_x_is_computed_once_per_strip_plus_the_apron(height, split):
    """With sliding, a strip of s rows computes s + 2 rows of blur_x (its 3-tap apron),
    not 3 * s; strips of a shift_inwards split may overlap, each computes its own."""
    width = 11
    inp, out = blur(split=split)
    kernel = run_both(inp, out, (height, width), COUNTING)
    rows = sum(min(split, height) + 2 for _ in strip_starts(height, split))
    assert kernel.store_counts["blur_x"] == rows * width
    inp, out = blur(split=split, slide=False)
    unslid = run_both(inp, out, (height, width), COUNTING)
    assert unslid.store_counts["blur_x"] > kernel.store_counts["blur_x"] or split == 1


@pytest.mark.parametrize("taps", [(-1, 0, 1), (-2, -1, 0, 1, 2), (-3, 1), (0,), (2, 5)])
@pytest.mark.parametrize("height", [1, 2, 31, 33])
def test_stencils_match_the_reference(taps, height):
    """3-tap, 5-tap, asymmetric and offset stencils slide correctly on awkward heights."""
    inp, out = blur(taps=taps, split=8)
    kernel = run_both(inp, out, (height, 9), COUNTING)
    strips = len(strip_starts(height, 8))
    rows = min(8, height) + max(taps) - min(taps)
    assert kernel.store_counts["blur_x"] == strips * rows * 9


def test_a_parallel_loop_between_storage_and_compute_is_not_slid():
    """Iterations of a parallel loop don't run in order, so nothing is reused: every
    iteration computes its whole region, and the result is still right."""
    inp, out = blur(split=8, parallel=True)
    _, ctx = lower_until(out, "sliding_window")
    assert ctx.sliding_windows == {}
    for height in (1, 13, 40):
        run_both(inp, out, (height, 7))


def test_a_window_that_is_not_monotonic_is_recomputed():
    """out reads blur_x at 5 - y or y - 5: the region bounds inference gives, rows
    [-|y - 5|, |y - 5|], shrinks then grows, so blur_x is recomputed (all of that region)
    at each iteration, correctly."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = c[y, x] * 2
    out[y, x] = bx[halo.select(y < 5, 5 - y, y - 5), x]
    out.split(y, yo, yi, 4)
    bx.compute_at(out, yi).store_at(out, yo)
    _, ctx = lower_until(out, "sliding_window")
    assert ctx.sliding_windows == {}
    for height in (1, 6, 11):
        run_both(inp, out, (height, 5))
    for height in (4, 12):  # whole strips: each row of out recomputes its whole region
        kernel = run_both(inp, out, (height, 5), COUNTING)
        regions = sum(2 * abs(r - 5) + 1 for r in range(height))
        assert kernel.store_counts["blur_x"] == regions * 5


def test_a_shrinking_window_slides_down():
    """out[y] reads blur_x[-y] and blur_x[1 - y]: the window moves down as y grows, and
    each of its rows is computed once."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = c[y, x] + 1
    out[y, x] = bx[-y, x] - bx[1 - y, x]
    bx.store_root().compute_at(out, y)
    stmt, ctx = lower_until(out, "sliding_window")
    assert [s.name for s in nodes_of(stmt, n.LetStmt) if "slide" in s.name] == \
        ["blur_x.s0.y.slide_max"]
    for height in (1, 2, 9):
        kernel = run_both(inp, out, (height, 4), COUNTING)
        assert kernel.store_counts["blur_x"] == (height + 1) * 4


@pytest.mark.parametrize("height", [1, 3, 16, 29])
def test_a_two_level_chain_slides_both_producers(height):
    """g -> f -> out, both stored per strip and computed per row: each computes each of
    its rows once per strip (f: strip + 2, g: strip + 4)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    g, f, out = halo.Func("g"), halo.Func("f"), halo.Func("out")
    g[y, x] = c[y, x] * 3
    f[y, x] = g[y - 1, x] + g[y + 1, x]
    out[y, x] = f[y - 1, x] + f[y, x] + f[y + 1, x]
    out.split(y, yo, yi, 8)
    f.compute_at(out, yi).store_at(out, yo)
    g.compute_at(out, yi).store_at(out, yo)
    _, ctx = lower_until(out, "sliding_window")
    assert set(ctx.sliding_windows) == {"f", "g"}
    kernel = run_both(inp, out, (height, 6), COUNTING)
    strips = len(strip_starts(height, 8))
    rows = min(8, height)
    assert kernel.store_counts == {"out": strips * rows * 6, "f": strips * (rows + 2) * 6,
                                   "g": strips * (rows + 4) * 6}


def test_sliding_over_an_inner_loop_of_a_tile():
    """store_at the row, compute_at the column: blur_x slides along x within each row
    (each column of its 3 rows computed once per row of out)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = c[y - 1, x] + c[y + 1, x]
    out[y, x] = bx[y, x - 1] + bx[y, x] + bx[y, x + 1]
    bx.store_at(out, y).compute_at(out, x)
    _, ctx = lower_until(out, "sliding_window")
    assert {w.dim for w in ctx.sliding_windows["blur_x"]} == {1}
    for shape in [(1, 1), (3, 17), (5, 2)]:
        kernel = run_both(inp, out, shape, COUNTING)
        assert kernel.store_counts["blur_x"] == shape[0] * (shape[1] + 2)


@pytest.mark.parametrize("height", [1, 30, 67])
def test_parallel_strips_and_vectors_still_slide(height):
    """A parallel loop outside the storage (the strips) and vectorized loops inside the
    produce and consume don't stop sliding: each strip has its own storage."""
    inp, out = blur(split=16)
    out.parallel(yo).vectorize(x, 8)
    _, ctx = lower_until(out, "sliding_window")
    assert "blur_x" in ctx.sliding_windows
    run_both(inp, out, (height, 37))


def random_stencil_chain(rng):
    """A one- or two-level stencil chain (int32, so results are exact) with a random
    strip split, storage level, compute level and producer split; returns it with a
    description for failure messages."""
    y, x, yo, yi, ty, tyi = halo.vars("y x yo yi ty tyi")
    inp = halo.ImageParam(halo.int32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    g, f, out = halo.Func("g"), halo.Func("f"), halo.Func("out")
    g[y, x] = c[y, x] * 3 + c[y, x + 1]
    two_levels = rng.random() < 0.5
    source = g if two_levels else c
    taps_f = sorted(rng.sample(range(-3, 4), rng.randint(1, 3)))
    taps_out = sorted(rng.sample(range(-3, 4), rng.randint(1, 3)))
    f[y, x] = sum(source[y + t, x] * (k + 1) for k, t in enumerate(taps_f))
    out[y, x] = sum(f[y + t, x - k % 2] for k, t in enumerate(taps_out))
    split, tail = rng.choice([1, 2, 3, 8]), rng.choice(["auto", "guard", "shift_inwards"])
    out.split(y, yo, yi, split, tail=tail)
    compute = rng.choice([yi, x])
    if compute is yi and rng.random() < 0.4:
        out.vectorize(x, 4)
    at_root = rng.random() < 0.4
    if not at_root and rng.random() < 0.4:
        out.parallel(yo)
    for func in [f, g] if two_levels else [f]:
        func.compute_at(out, compute)
        if at_root:
            func.store_root()
        else:
            func.store_at(out, yo)
    if rng.random() < 0.3:
        f.split(y, ty, tyi, rng.choice([2, 3]), tail=rng.choice(["guard", "shift_inwards"]))
    text = (f"taps {taps_f} {taps_out}, two levels {two_levels}, split {split} {tail}, "
            f"compute at {compute.name}, store at {'root' if at_root else 'yo'}")
    return inp, out, text


@pytest.mark.parametrize("seed", range(8))
def test_random_stencil_chains_match_the_reference(seed):
    """Random stencil chains, storage and compute levels, splits and tails, on awkward
    sizes: whether or not they slide and fold, results are exact."""
    rng = random.Random(seed)
    for trial in range(3):
        inp, out, text = random_stencil_chain(rng)
        shape = (rng.choice([1, 2, 5, 7, 13, 31]), rng.choice([1, 3, 9]))
        image = np.random.default_rng(trial).integers(-100, 100, shape, dtype=np.int32)
        got = out.realize(shape, inputs={inp: image})
        expected = halo.reference(out, shape, inputs={inp: image})
        assert np.array_equal(got, expected), f"{text}, shape {shape}"


@pytest.mark.parametrize("shape", [(16, 16), (13, 11), (1, 1), (5, 20)])
def test_tiles_slide_down_each_column_of_tiles(shape):
    """tile(y, x, ..., 8, 8) with blur_x stored per row of tiles and computed per row
    of a tile: the rows slide within each tile, which starts its window afresh (the
    storage is shared by the tiles of a row but each computes its own columns)."""
    xo, xi = halo.vars("xo xi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = c[y, x] * 2
    out[y, x] = bx[y - 1, x] + bx[y, x] + bx[y + 1, x]
    out.tile(y, x, yo, xo, yi, xi, 8, 8)
    bx.store_at(out, yo).compute_at(out, yi)
    _, ctx = lower_until(out, "sliding_window")
    assert {w.loop for w in ctx.sliding_windows["blur_x"]} == {"out.s0.y.yi"}
    kernel = run_both(inp, out, shape, COUNTING)
    tiles_x = len(strip_starts(shape[1], 8))
    rows = len(strip_starts(shape[0], 8)) * (min(8, shape[0]) + 2)
    assert kernel.store_counts["blur_x"] == rows * tiles_x * min(8, shape[1])


@pytest.mark.parametrize("origin", [(5, 0), (-3, 2)])
def test_a_loop_that_does_not_start_at_zero(origin):
    """store_root, compute_at(out, y), realized from a non-zero origin: the first
    iteration is at the loop's min (the origin), not at 0."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = c[y, x] + 1
    out[y, x] = bx[y - 1, x] * bx[y + 1, x]
    bx.store_root().compute_at(out, y)
    image = np.random.default_rng(0).random((12, 9), dtype=np.float32)
    kernel = out.compile(COUNTING)
    got = kernel((7, 4), origin=origin, inp=image)
    lo_y, lo_x = origin
    shifted = halo.Func("shifted")  # the reference realizes from (0, 0)
    shifted[y, x] = out[y + lo_y, x + lo_x]
    expected = halo.reference(shifted, (7, 4), inputs={inp: image})
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert kernel.store_counts["blur_x"] == (7 + 2) * 4


@pytest.mark.parametrize("shape", [(64, 40), (45, 19)])
def test_computed_at_the_outer_x_of_vectors_slides_down_the_strip(shape):
    """Halide's classic blur: blur_x stored per strip and computed at the consumer's
    outer x of its vectors. Consecutive x iterations need disjoint columns (sliding along
    x reuses nothing), consecutive rows share two rows: it slides along yi, so each
    iteration computes one new row of 8 columns, as Halide does (it slid along x and
    computed 3 rows per vector of output before)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = (c[y, x - 1] + c[y, x] + c[y, x + 1]) / 3
    out[y, x] = (bx[y - 1, x] + bx[y, x] + bx[y + 1, x]) / 3
    out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 8)
    bx.store_at(out, yo).compute_at(out, x).vectorize(x, 8)
    kernel = run_both(inp, out, shape, COUNTING)
    rows = sum(32 + 2 for _ in strip_starts(shape[0], 32))
    columns = -(-shape[1] // 8) * 8  # (the last vector shifts inwards, overlapping)
    assert kernel.store_counts["blur_x"] == rows * columns
