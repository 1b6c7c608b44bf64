"""Boundary conditions: each returns a new Func over fresh Vars, defined everywhere from a
source that is defined on a box (an input's shape, or explicit bounds for a Func)."""
from __future__ import annotations

import numpy as np
import pytest

import halo

y, x = halo.vars("y x")

KINDS = ["repeat_edge", "mirror_image", "mirror_interior", "repeat_image"]
PAD_MODES = {"repeat_edge": "edge", "mirror_image": "symmetric",
             "mirror_interior": "reflect", "repeat_image": "wrap"}


@pytest.mark.parametrize("kind", KINDS)
def test_boundary_condition_returns_a_func_with_fresh_args(kind):
    """Two calls on the same input give two Funcs with distinct names and fresh Vars."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    a = getattr(halo.boundary, kind)(inp)
    b = getattr(halo.boundary, kind)(inp)
    assert isinstance(a, halo.Func) and a.name != b.name
    assert a.dimensions == 2 and len(a.args) == 2
    assert {v.name for v in a.args}.isdisjoint(v.name for v in b.args)
    assert {v.name for v in a.args}.isdisjoint({"y", "x"})


@pytest.mark.parametrize("kind", KINDS)
def test_boundary_condition_matches_numpy_pad(kind):
    """Reading 3 past each edge of a 1-D input matches np.pad in the matching mode."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    edge = getattr(halo.boundary, kind)(inp)
    out = halo.Func("out")
    out[x] = edge[x - 3]
    data = np.array([10, 20, 30, 40], np.int32)
    np.testing.assert_array_equal(out.realize((10,), inputs={inp: data}),
                                  np.pad(data, 3, mode=PAD_MODES[kind]))


def test_constant_exterior_of_a_buffer():
    """Outside a Buffer's shape, constant_exterior gives the constant."""
    buf = halo.Buffer(np.array([[1, 2], [3, 4]], np.int16), "buf")
    ext = halo.boundary.constant_exterior(buf, -1)
    out = halo.Func("out")
    out[y, x] = ext[y - 1, x - 1]
    want = np.pad(buf.array, 1, constant_values=-1)
    got = out.realize((4, 4))
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, want)


def test_func_source_needs_bounds():
    """A Func has no shape: without bounds= the boundary condition is an error."""
    f = halo.Func("f")
    f[x] = x * 3
    with pytest.raises(halo.DefinitionError, match="pass bounds="):
        halo.boundary.repeat_edge(f)


def test_func_source_with_bounds():
    """constant_exterior(f, -1, bounds=[(0, 4)]) is f on [0, 3] and -1 elsewhere."""
    f = halo.Func("f")
    f[x] = x * 3
    ext = halo.boundary.constant_exterior(f, -1, bounds=[(0, 4)])
    out = halo.Func("out")
    out[x] = ext[x - 2]
    np.testing.assert_array_equal(out.realize((8,)), [-1, -1, 0, 3, 6, 9, -1, -1])


def test_bounds_of_the_wrong_rank_are_an_error():
    """Two (min, extent) pairs for a 1-D Func are refused."""
    f = halo.Func("f")
    f[x] = x
    with pytest.raises(halo.DefinitionError, match="2 bounds given for 1 dimension"):
        halo.boundary.repeat_edge(f, bounds=[(0, 4), (0, 2)])


def test_boundary_condition_args_can_be_scheduled():
    """The returned Func's args name its loops: compute_root + vectorize on them works."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    edge = halo.boundary.repeat_edge(inp)
    out = halo.Func("out")
    out[x] = edge[x - 1] + edge[x + 1]
    (d0,) = edge.args
    edge.compute_root().split(d0, halo.Var("o"), halo.Var("i"), 4)
    data = np.arange(5, dtype=np.float32)
    padded = np.pad(data, 1, mode="edge")
    np.testing.assert_array_equal(out.realize((5,), inputs={inp: data}),
                                  padded[:-2] + padded[2:])


def test_boundary_conditions_import_as_a_module():
    """`from halo.boundary import repeat_edge` works as `halo.boundary.repeat_edge` does."""
    from halo.boundary import constant_exterior, repeat_edge

    assert repeat_edge is halo.boundary.repeat_edge
    assert constant_exterior is halo.boundary.constant_exterior
