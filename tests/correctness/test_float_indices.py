"""Indices computed through floats (a resize's `floor` of a scaled coordinate): bounds
inference bounds a float to int32 cast by its float interval (issue 12, item 1)."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from tests.correctness.conftest import assert_matches_reference


def test_an_index_cast_through_float_reads_the_right_rows() -> None:
    """`g[int32(float32(y)), x]` with g at root allocated g[0] and read at -2**31."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g = halo.Func("g")
    g[y, x] = halo.boundary.repeat_edge(inp)[y, x] * 2.0
    f = halo.Func("f")
    f[y, x] = g[halo.cast(halo.int32, halo.cast(halo.float32, y)), x]
    g.compute_root()
    got = f.realize((4, 4), inputs={inp: np.ones((4, 4), np.float32)})
    np.testing.assert_array_equal(got, np.full((4, 4), 2.0, np.float32))


@pytest.mark.parametrize("placement", ["root", "at_row", "inline"])
def test_bicubic_rows_from_floor_of_a_float_coordinate(placement: str) -> None:
    """A resize reading rows floor(y * scale) - 1 .. + 2 of a Func segfaulted with
    compute_at and returned NaN at root."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    clamped = halo.Func("clamped")
    clamped[y, x] = halo.boundary.repeat_edge(inp)[y, x]
    sy = (halo.cast(halo.float32, y) + 0.5) * 0.75 - 0.5
    iy = halo.cast(halo.int32, halo.floor(sy))
    t = sy - halo.floor(sy)
    out = halo.Func("out")
    out[y, x] = ((1 - t) * clamped[iy - 1, x] + clamped[iy, x] + clamped[iy + 1, x]
                 + t * clamped[iy + 2, x])
    if placement == "root":
        clamped.compute_root()
    elif placement == "at_row":
        clamped.compute_at(out, y)
    data = np.random.default_rng(0).random((12, 9), dtype=np.float32)
    assert_matches_reference(out, (16, 9), inputs={inp: data})
