"""An intermediate Func whose storage holds more than 2**31 elements: its stride was an
int32 let (`g.stride.0 = g.extent.1 * g.extent.2`) that wrapped, and the store at the
second plane went about 2 GB before the buffer (a segfault). Strides are now written out
in each index, which the backend computes in 64 bits. Only two elements of the 4 GB
buffer are touched, so it costs a few pages of real memory."""
from __future__ import annotations

import os

import numpy as np
import pytest

import halo
from halo.errors import ScheduleError

from .child_process import assert_survives_in_a_child


def _run() -> None:
    # g's region: c in [0, 1], y in [0, 65535], x in [0, B]: each plane has 65536 * (B + 1)
    # elements, 2**31 - 65536 (just below the limit) or 2**31 (just above) by B.
    c, y, x = halo.vars("c y x")
    size_a, size_b = 65535, int(os.environ["HALO_TEST_B"])
    g, f = halo.Func("g"), halo.Func("f")
    g[c, y, x] = halo.cast(halo.uint8, c * 100 + (y + x) % 7)
    f[x] = g[x, (1 - x) * size_a, (1 - x) * size_b]
    g.compute_at(f, x).store_root()
    np.testing.assert_array_equal(f.realize((2,)), [(size_a + size_b) % 7, 100])


@pytest.mark.parametrize("b", ["32766", "32767"], ids=["below", "above"])
def test_a_plane_of_2_31_elements_is_addressed_in_64_bits(b):
    assert_survives_in_a_child("test_allocation_past_2_31_elements", HALO_TEST_B=b)


def test_a_constant_size_past_2_31_elements_is_refused():
    """Constant extents fold into one int32 constant, which would wrap: refused, naming
    the Func."""
    y, x = halo.vars("y x")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = y + x
    f[y, x] = g[y, x]
    g.compute_root().bound(y, 0, 65536).bound(x, 0, 32768)
    with pytest.raises(ScheduleError, match=r"^g: .* more than 2\*\*31 - 1"):
        f.lower()
