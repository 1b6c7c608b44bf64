"""Multi-stage pipelines, boundary conditions, Params and integer types under schedules."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.ir import nodes as n
from halo.ir.visitor import walk

from .conftest import assert_matches_reference

y, x, c, yo, xo, yi, xi = halo.vars("y x c yo xo yi xi")


def three_stage():
    """inp -> a (3-tap in x) -> b (3-tap in y) -> out (pointwise, x-shifted read of a)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    e = halo.boundary.mirror_interior(inp)
    a, b, out = halo.Func("a"), halo.Func("b"), halo.Func("out")
    a[y, x] = e[y, x - 1] * 0.25 + e[y, x] * 0.5 + e[y, x + 1] * 0.25
    b[y, x] = a[y - 1, x] - a[y + 1, x]
    out[y, x] = halo.sqrt(halo.abs(b[y, x])) + a[y, x + 2]
    return inp, a, b, out


def _s_default(a, b, out):
    pass
def _s_root(a, b, out):
    a.compute_root()
    b.compute_root()
def _s_chain_at(a, b, out):
    out.tile(y, x, yo, xo, yi, xi, 8, 8)
    b.compute_at(out, yi)
    a.compute_at(out, xo)
def _s_store_outside(a, b, out):
    out.split(y, yo, yi, 4)
    b.compute_at(out, yi)
    a.store_at(out, yo).compute_at(out, yi)
def _s_mixed(a, b, out):
    out.tile(y, x, yo, xo, yi, xi, 5, 3).fuse(yo, xo, c).parallel(c)
    a.compute_root().vectorize(x, 4)
    b.compute_at(out, c).unroll(x, 2)


@pytest.mark.parametrize("shape", [(1, 1), (11, 29), (32, 17)])
@pytest.mark.parametrize("sched", [_s_default, _s_root, _s_chain_at, _s_store_outside,
                                   _s_mixed], ids=lambda f: f.__name__[3:])
def test_three_stage_pipeline(sched, shape):
    """A 3-stage pipeline with compute_at inside tiles and store_at outside them."""
    inp, a, b, out = three_stage()
    sched(a, b, out)
    image = np.random.default_rng(8).random((shape[0] + 3, shape[1] + 5), dtype=np.float32)
    assert_matches_reference(out, shape, {inp: image}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind,mode", [("repeat_edge", "edge"), ("mirror_image", "symmetric"),
                                       ("mirror_interior", "reflect"),
                                       ("repeat_image", "wrap")])
def test_boundary_conditions(kind, mode):
    """Each boundary condition matches the corresponding np.pad mode."""
    inp = halo.ImageParam(halo.int16, 2, "inp")
    e = getattr(halo.boundary, kind)(inp)
    out = halo.Func("out")
    out[y, x] = e[y - 3, x - 4]
    e.compute_root()
    data = np.arange(5 * 7, dtype=np.int16).reshape(5, 7)
    expected = np.pad(data, ((3, 3), (4, 4)), mode=mode)
    assert_matches_reference(out, expected.shape, {inp: data}, expected)


def test_constant_exterior_with_param():
    """constant_exterior fills with a Param's value; a second Param scales."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    fill, gain = halo.Param(halo.float32, "fill"), halo.Param(halo.float32, "gain", default=2.0)
    e = halo.boundary.constant_exterior(inp, fill)
    out = halo.Func("out")
    out[y, x] = e[y - 1, x + 1] * gain
    data = np.random.default_rng(9).random((4, 6), dtype=np.float32)
    expected = np.pad(data, 1, constant_values=-1.0)[0:4, 2:8] * 2  # e[y-1, x+1] = p[y, x+2]
    got = assert_matches_reference(out, (4, 6), {inp: data, fill: -1.0}, expected)
    got3 = out.realize((4, 6), inputs={inp: data, fill: -1.0, gain: 3.0})
    np.testing.assert_allclose(got3, got * 1.5, rtol=1e-6)


def test_integer_types_and_casts():
    """uint8 -> int16 arithmetic with floor division and modulo of negatives -> uint8."""
    inp = halo.ImageParam(halo.uint8, 2, "inp")
    d, out = halo.Func("d"), halo.Func("out")
    d[y, x] = halo.cast(halo.int16, inp[y, x]) - halo.cast(halo.int16, inp[y, x + 1])
    out[y, x] = halo.cast(halo.uint8, (d[y, x] // 3) % 7 * 37 + d[y, x] * 5)
    d.compute_root().split(x, xo, xi, 4, tail="round_up")
    # round_up computes d up to x = 15, which reads inp up to x = 16: the input is wide
    # enough for that, and the output only uses the first 13 columns.
    data = np.random.default_rng(10).integers(0, 256, (9, 17), dtype=np.uint8)
    diff = data[:, :13].astype(np.int16) - data[:, 1:14].astype(np.int16)
    expected = ((diff // 3) % 7 * 37 + diff * 5).astype(np.uint8)
    assert_matches_reference(out, (9, 13), {inp: data}, expected)


def test_int_division_by_zero_is_zero():
    """Integer x // 0 and x % 0 are 0, as the IR documents."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    out = halo.Func("out")
    out[x] = inp[x] // (x % 3) + inp[x] % (x % 2)
    data = np.arange(-6, 6, dtype=np.int32)
    den3, den2 = np.arange(12) % 3, np.arange(12) % 2
    with np.errstate(divide="ignore"):
        expected = (np.where(den3 == 0, 0, data // np.where(den3 == 0, 1, den3))
                    + np.where(den2 == 0, 0, data % np.where(den2 == 0, 1, den2)))
    assert_matches_reference(out, (12,), {inp: data}, expected.astype(np.int32))


def test_zero_dimensional_func_and_buffer():
    """A 0-d Func reduces a Buffer bound at definition time."""
    data = np.arange(10, dtype=np.float64)
    buf = halo.Buffer(data, "buf")
    r = halo.RDom(buf, name="r")
    total = halo.Func("total")
    total[()] = halo.sum(buf[r] * buf[r])
    got = assert_matches_reference(total, (), None, np.array((data * data).sum()))
    assert got.shape == ()


def test_pipeline_with_two_outputs():
    """A Pipeline realizes two outputs sharing a producer in one pass."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    s, o1, o2 = halo.Func("s"), halo.Func("o1"), halo.Func("o2")
    s[x] = inp[x] * 2.0
    o1[x] = s[x] + 1.0
    o2[x] = s[x] * s[x]
    s.compute_root()
    data = np.random.default_rng(11).random(9, dtype=np.float32)
    a, b = halo.Pipeline([o1, o2]).realize((9,), inputs={inp: data})
    np.testing.assert_allclose(a, data * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(b, (data * 2) ** 2, rtol=1e-6)


def test_compile_reuses_kernel_and_out_argument():
    """A compiled Kernel runs again on new inputs, by name, into an existing array."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x] + 1.0
    kernel = f.compile()
    out = np.zeros(5, dtype=np.float32)
    kernel(out=out, inp=np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(out, np.arange(1, 6, dtype=np.float32))
    np.testing.assert_array_equal(kernel((3,), inp=np.ones(3, np.float32)), [2, 2, 2])
    assert "define" in kernel.source()


@pytest.mark.parametrize("t", [halo.int16, halo.float32, halo.float64, halo.int32], ids=str)
def test_pipelines_that_print_alike_but_differ_in_types_compile_apart(t):
    """The same definition over inputs of different types prints the same loop nest; each
    compiles on its own (a kernel compiled for another type in this process is not
    reused)."""
    inp = halo.ImageParam(t, 1, "inp")
    f = halo.Func("f")
    f[x] = halo.abs(inp[x])
    a = np.array([-3, 0, 2, -7], dtype=t.numpy)
    result = f.realize((4,), inputs={inp: a})
    assert result.dtype == t.numpy
    np.testing.assert_array_equal(result, np.abs(a))


def test_output_read_by_another_stage_is_produced_first():
    """When an intermediate reads an output, the output is produced before it, whatever
    order the outputs are listed in."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    a, b, c = halo.Func("a"), halo.Func("b"), halo.Func("c")
    a[x] = inp[x] + 1.0
    b[x] = a[x] * 3.0
    c[x] = b[x] - a[x]
    b.compute_root()
    data = np.random.default_rng(12).random(7, dtype=np.float32)
    got_c, got_a = halo.Pipeline([c, a]).realize((7,), inputs={inp: data})
    np.testing.assert_allclose(got_a, data + 1, rtol=1e-6)
    np.testing.assert_allclose(got_c, (data + 1) * 2, rtol=1e-6)


def test_strided_and_transposed_inputs():
    """Inputs with any layout (transposed, strided views) give the same result; an out=
    array must be contiguous in its last dimension."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x] * 2.0 + inp[y, x + 1]
    base = np.random.default_rng(13).random((12, 10), dtype=np.float32)
    for view in (base.T, base[::2, ::3], base[:, 1:]):
        shape = (view.shape[0], view.shape[1] - 1)
        expected = view[:, :-1] * 2 + view[:, 1:]
        np.testing.assert_allclose(f.realize(shape, inputs={inp: view}), expected, rtol=1e-6)
    with pytest.raises(halo.InputError, match="consecutive elements in its last dimension"):
        f.realize(out=np.zeros((9, 12), np.float32).T, inputs={inp: base})


def test_split_producer_inside_a_split_consumer_reads_only_what_it_needs():
    """A producer computed per tile and split again (vectorize(x, 2)) reads exactly the
    input it needs: relaxing the tile loop must not decouple a range's start from its
    extent (a false out-of-bounds error before promise_clamped)."""
    xo, xi = halo.vars("xo xi")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = inp[x] * 2
    g[x] = f[x] + 1
    g.split(x, xo, xi, 4)
    f.compute_at(g, xo).vectorize(x, 2)
    data = np.arange(16, dtype=np.float32)
    assert_matches_reference(g, (16,), {inp: data}, data * 2 + 1)


def test_producer_inside_a_fused_update_loop_stored_at_root():
    """A producer computed inside a fused update loop, stored at root and split with
    round_up, gets a bounded allocation (found by random schedules: the promised range of
    a fused variable was lost when bounds were relaxed again)."""
    t, v4, v5 = halo.vars("t v4 v5")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    b, c = halo.Func("b"), halo.Func("c")
    b[y, x] = inp[y, x] * 2.0
    r = halo.RDom((-1, 3), name="r")
    c[y, x] = 0.0
    c[y, x] += b[y, x + r + 1] * 0.5
    c.update(0).reorder(r.x, y, x).fuse(y, x, t)
    b.split(y, v4, v5, 3, tail="round_up").store_root().compute_at(c.update(0), t)
    # round_up makes b compute whole blocks of 3 rows, and relaxing the fused loop
    # bounds them conservatively: the input has rows to spare.
    image = np.random.default_rng(14).random((12, 12), dtype=np.float32)
    expected = image[:6, 0:8] + image[:6, 1:9] + image[:6, 2:10]  # 0.5 * 2 * (3 taps)
    assert_matches_reference(c, (6, 8), {inp: image}, expected, rtol=1e-5)


@pytest.mark.parametrize("width", [2, 3])
def test_vectorized_func_on_the_stack(width):
    """A small Func computed per point of its consumer lives on the stack, and its
    vectorized row is stored and loaded as one vector (found by random schedules)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    b, c = halo.Func("b"), halo.Func("c")
    b[y, x] = inp[y, x] * 2.0
    c[y, x] = b[y, x] + b[y, x + width - 1]
    b.compute_at(c, x).vectorize(x)
    image = np.random.default_rng(15).random((5, 16), dtype=np.float32)
    stmt = c.lower().stmt
    assert any(isinstance(a, n.Allocate) and a.scope == "stack" for a in walk(stmt))
    assert any(isinstance(s, n.Store) and isinstance(s.index, n.Ramp) for s in walk(stmt))
    assert_matches_reference(c, (5, 11), {inp: image},
                             2 * (image[:, :11] + image[:, width - 1:width + 10]))


def test_masked_vector_tail_on_the_stack():
    """A guarded vector tail writes a stack buffer through masked stores (the masked
    intrinsics take an untyped pointer; a stack buffer's is typed)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    b, c = halo.Func("b"), halo.Func("c")
    b[y, x] = inp[y, x] * 2.0
    c[y, x] = b[y, x] + b[y, x + 2]
    b.compute_at(c, x).split(x, xo, xi, 4, tail="guard").vectorize(xi)
    image = np.random.default_rng(16).random((4, 12), dtype=np.float32)
    stmt = c.lower().stmt
    assert any(isinstance(s, n.Store) and s.predicate is not None for s in walk(stmt))
    assert_matches_reference(c, (4, 10), {inp: image}, 2 * (image[:, :10] + image[:, 2:12]))


@pytest.mark.parametrize("size", [1, 5, 11, 13])
def test_read_at_an_abs_index_of_a_root_func(size):
    """g[abs(x - 5)] with g computed at root: g's region and the region checks use
    abs (the checks evaluate it before running)."""
    i = halo.Var("i")
    inp = halo.ImageParam(halo.int32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[i] = inp[i] * 3 + 1
    f[i] = g[halo.abs(i - 5)] - inp[halo.abs(i - 2)]
    g.compute_root()
    data = np.arange(17, dtype=np.int32) * 7 - 20
    assert_matches_reference(f, (size,), inputs={inp: data})


def test_out_of_range_read_at_an_abs_index_is_a_bounds_error():
    """Reading an input at abs(x - 5) past its end is reported like any other read."""
    i = halo.Var("i")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[i] = inp[halo.abs(i - 5)]
    with pytest.raises(halo.BoundsError, match=r"input inp is accessed at \[0, 9\]"):
        f.realize((15,), inputs={inp: np.zeros(6, np.float32)})
