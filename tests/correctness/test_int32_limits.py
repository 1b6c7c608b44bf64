"""Regions at the edge of int32, halo's coordinate type: every coordinate that fits is
computed (a loop ending at int32's maximum overflowed its end, start + extent, and
returned uninitialized memory), and a region that doesn't fit is a BoundsError before
running (issue 12, item 2)."""
from __future__ import annotations

import numpy as np
import pytest

import halo

x, xo, xi = halo.vars("x xo xi")
SCHEDULES = {
    "inline": lambda f, g: None,
    "root": lambda f, g: f.compute_root(),
    "split": lambda f, g: g.split(x, xo, xi, 2),
    "vectorize": lambda f, g: g.vectorize(x, 4),
    "compute_at": lambda f, g: (g.split(x, xo, xi, 2), f.compute_at(g, xo)),
    "parallel": lambda f, g: g.parallel(x),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_region_ending_at_int32_max_is_computed(schedule: str) -> None:
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = halo.cast(halo.int64, x)
    g[x] = f[x] * 2
    SCHEDULES[schedule](f, g)
    start = 2**31 - 7
    got = g.realize((7,), origin=(start,))
    np.testing.assert_array_equal(got, 2 * np.arange(start, start + 7, dtype=np.int64))


def test_a_region_past_int32_max_is_refused_before_running() -> None:
    f = halo.Func("f")
    f[x] = halo.cast(halo.int64, x)
    with pytest.raises(halo.BoundsError, match=r"f\.realize\(\.\.\.\): the region "
                       r"\[2147483645, 2147483648\] of dimension 0 .* ends past 2147483647"
                       r".*start it at 2147483644 or lower"):
        f.realize((4,), origin=(2**31 - 3,))
