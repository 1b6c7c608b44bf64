"""storage_flattening: multi-dimensional Funcs and inputs become flat buffers.

Inputs are indexed with their run-time strides from 0, outputs with their mins and
strides, and internal Funcs densely (row-major) from the mins bounds inference chose, on
the stack when small and constant-sized, else on the heap.
"""
from __future__ import annotations

import numpy as np

import halo
from halo.ir import nodes as n

from .conftest import evaluate, lets_of, lower_until, nodes_of

c, y, x = halo.vars("c y x")


def lowered(outputs) -> n.Stmt:
    return lower_until(outputs, "storage_flattening")[0]


def only(found: list):
    assert len(found) == 1, found
    return found[0]


def test_input_reads_use_the_input_strides_from_zero():
    """inp[y, x] becomes a Load at y * inp.stride.0 + x: the last dimension of every
    buffer is contiguous."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x]
    load = only(nodes_of(lowered(f), n.Load, "inp"))
    assert load.type == halo.float32
    assert load.index == n.Add(n.Mul(n.Var("f.s0.y"), n.Var("inp.stride.0")), n.Var("f.s0.x"))


def test_output_stores_use_the_output_mins_and_strides():
    """f[y, x] = ... becomes a Store at (y - f.min.0) * f.stride.0 + (x - f.min.1)."""
    f = halo.Func("f")
    f[y, x] = y + x
    store = only(nodes_of(lowered(f), n.Store, "f"))
    assert store.index == n.Add(
        n.Mul(n.Sub(n.Var("f.s0.y"), n.Var("f.min.0")), n.Var("f.stride.0")),
        n.Sub(n.Var("f.s0.x"), n.Var("f.min.1")))


def test_no_multidimensional_node_remains():
    """After flattening there is no Realize, Provide, or Call of a Func or input; math
    calls stay."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = halo.sqrt(g[y, x])
    g.compute_root()
    stmt = lowered(f)
    assert nodes_of(stmt, n.Realize) == [] and nodes_of(stmt, n.Provide) == []
    assert [call.name for call in nodes_of(stmt, n.Call)] == ["sqrt"]


def test_internal_func_is_dense_row_major():
    """A 3-D compute_root Func gets strides (e1 * e2, e2, 1), written out in its indices,
    and size e0 * e1 * e2, and its element (c, y, x) is at the row-major offset from its
    mins."""
    inp = halo.ImageParam(halo.float32, 3, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[c, y, x] = inp[c, y, x] * 2.0
    f[c, y, x] = g[c, y, x] + 1.0
    g.compute_root()
    stmt = lowered(f)
    lets = lets_of(stmt)
    out = {"f.min.0": 1, "f.extent.0": 3, "f.min.1": 10, "f.extent.1": 4,
           "f.min.2": -5, "f.extent.2": 7}
    assert not any(name.startswith("g.stride.") for name in lets)
    alloc = only(nodes_of(stmt, n.Allocate, "g"))
    assert evaluate(alloc.size, out, lets) == 3 * 4 * 7
    assert alloc.scope == "heap" and alloc.type == halo.float32
    store = only(nodes_of(stmt, n.Store, "g"))
    at = {**out, "g.s0.c": 2, "g.s0.y": 12, "g.s0.x": -1}
    assert evaluate(store.index, at, lets) == (2 - 1) * 28 + (12 - 10) * 7 + (-1 + 5)


def test_small_constant_size_func_goes_on_the_stack():
    """g computed at f's x, read at a 4x6 window: the Allocate of g is on the stack with
    size 24."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x]
    f[y, x] = g[y, x] + g[y + 3, x + 5]
    g.compute_at(f, x)
    alloc = only(nodes_of(lowered(f), n.Allocate, "g"))
    assert (alloc.scope, alloc.size) == ("stack", n.const(24))


def _row_buffer(width: int, dtype, scope: str | None = None) -> n.Allocate:
    """The Allocate of g, one row of `width` elements computed at f's y loop."""
    inp = halo.ImageParam(dtype, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x]
    f[y, x] = g[y, x]
    f.bound(x, 0, width)
    g.compute_at(f, y)
    if scope is not None:
        g.store_in(scope)
    return only(nodes_of(lowered(f), n.Allocate, "g"))


def test_stack_limit_is_16_kib():
    """A uint8 buffer of 16384 elements is on the stack; one more goes to the heap."""
    assert _row_buffer(16384, halo.uint8).scope == "stack"
    assert _row_buffer(16385, halo.uint8).scope == "heap"


def test_store_in_stack_keeps_a_large_constant_buffer_on_the_stack():
    """20000 bytes of float32 go to the heap by default and to the stack with
    store_in("stack")."""
    assert _row_buffer(5000, halo.float32).scope == "heap"
    alloc = _row_buffer(5000, halo.float32, "stack")
    assert (alloc.scope, alloc.size) == ("stack", n.const(5000))


def test_symbolic_size_func_goes_on_the_heap():
    """g.compute_root() over the whole output has a size known only at run time."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x]
    f[x] = g[x]
    g.compute_root()
    alloc = only(nodes_of(lowered(f), n.Allocate, "g"))
    assert alloc.scope == "heap" and not isinstance(alloc.size, n.Const)


def test_bound_on_every_dimension_gives_a_constant_size_allocation():
    """g.bound(y, 0, 4).bound(x, 0, 6): g is realized over exactly the bound, so its
    Allocate is on the stack with size 24 (the run-time check covers the reads)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x]
    f[y, x] = g[y, x]
    g.compute_root().bound(y, 0, 4).bound(x, 0, 6)
    alloc = only(nodes_of(lowered(f), n.Allocate, "g"))
    assert (alloc.scope, alloc.size) == ("stack", n.const(24))


def test_zero_dimensional_func_is_one_element_at_index_zero():
    """A 0-d Func is an Allocate of 1 element, stored and loaded at index 0."""
    z, f = halo.Func("z"), halo.Func("f")
    z[()] = 1.5
    f[x] = z[()] + x
    z.compute_root()
    stmt = lowered(f)
    alloc = only(nodes_of(stmt, n.Allocate, "z"))
    assert (alloc.scope, alloc.size) == ("stack", n.const(1))
    assert only(nodes_of(stmt, n.Store, "z")).index == n.const(0)
    assert only(nodes_of(stmt, n.Load, "z")).index == n.const(0)


def test_reads_of_an_internal_func_use_its_mins_and_strides():
    """f reading g[x + 2] for g computed at root over [min + 2, max + 2] loads element
    x + 2 - g.min.0, which is x - f.min.0."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x]
    f[x] = g[x + 2]
    g.compute_root()
    stmt = lowered(f)
    lets = lets_of(stmt)
    load = only(nodes_of(stmt, n.Load, "g"))
    for at in (4, 9):
        values = {"f.min.0": 4, "f.extent.0": 6, "f.s0.x": at}
        assert evaluate(load.index, values, lets) == at - 4


def test_inputs_of_any_layout_and_strided_outputs_with_an_origin():
    """Run-time strides make a transposed input and an output view with strided rows
    work, and the output's mins come from origin=."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x] * 10 + y - x
    data = np.arange(48, dtype=np.int32).reshape(6, 8)
    transposed = data.T  # shape (8, 6), not C-contiguous
    big = np.zeros((8, 12), np.int32)
    out = big[::2, 1:5]  # shape (4, 4), every other row
    f.realize(out=out, inputs={inp: transposed}, origin=(2, 1))
    ys, xs = np.mgrid[2:6, 1:5]
    np.testing.assert_array_equal(out, transposed[2:6, 1:5] * 10 + ys - xs)
    assert big[1].sum() == 0 and big[:, 0].sum() == 0
