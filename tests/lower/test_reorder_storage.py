"""reorder_storage: a Func's dimensions stored in another order (outermost first, the last
contiguous), the calls unchanged. Results against halo.reference on awkward sizes, the
flat index it gives, what it refuses, and how it prints and round-trips."""
import shutil
import subprocess

import numpy as np
import pytest

import halo
from apps import matmul
from halo import intrinsics
from halo.backends.cuda.cuda_c import PRELUDE
from halo.lang.environment import Environment
from halo.lang.schedule_files import apply_json, schedule_to_json

RNG = np.random.default_rng(11)


def _transpose_blur():
    """g[y, x] read down its columns by out; g stored by column."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, out = halo.Func("g"), halo.Func("out")
    g[y, x] = inp[y, x] * 2 + 1
    out[y, x] = g[y, x] + g[y + 1, x] + g[y + 2, x]
    return inp, g, out, (y, x)


def _check(out, inputs, shape):
    np.testing.assert_allclose(out.realize(shape, inputs=inputs),
                               halo.reference(out, shape, inputs=inputs), rtol=1e-6)


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (31, 5)])
@pytest.mark.parametrize("place", ["root", "tile", "vector"])
def test_a_func_stored_by_column_computes_the_same(shape, place):
    inp, g, out, (y, x) = _transpose_blur()
    yo, xo, yi, xi = halo.vars("yo xo yi xi")
    g.reorder_storage(x, y)
    if place == "root":
        g.compute_root()
    elif place == "tile":
        out.tile(y, x, yo, xo, yi, xi, 4, 8, tail="guard")
        g.compute_at(out, xo)
    else:
        out.vectorize(x, 8)
        g.compute_at(out, y).vectorize(x, 4)
    h, w = shape
    _check(out, {inp: RNG.random((h + 2, w), dtype=np.float32)}, shape)


def test_three_dimensions_in_any_order_and_a_sliding_window():
    """g slides down y (stored at root, computed per row of out, its rows folded)."""
    data = RNG.integers(-100, 100, (3, 12, 10)).astype(np.int32)
    for order in ("xcy", "yxc", "xyc"):
        c, y, x = halo.vars("c y x")
        inp = halo.ImageParam(halo.int32, 3, "inp")
        g, out = halo.Func("g"), halo.Func("out")
        g[c, y, x] = inp[c, y, x] * 3 - c
        out[c, y, x] = g[c, y, x] + g[c, y + 1, x] - g[c, y, x + 1]
        out.reorder(y, c, x)
        dims = {"c": c, "y": y, "x": x}
        g.reorder_storage(*(dims[d] for d in order)).store_root().compute_at(out, y)
        _check(out, {inp: data}, (3, 11, 9))


def test_the_flat_index_puts_the_last_named_dimension_contiguous():
    inp, g, out, (y, x) = _transpose_blur()
    g.compute_root().reorder_storage(x, y)
    text = str(out.lower())
    # y steps by one element, x by a column (g.extent.0 rows)
    assert "g[g.s0.y + (g.s0.x - out.min.1) * g.extent.0 - out.min.0] = " in text, text
    assert "g[out.s0.y + (out.s0.x - out.min.1) * g.extent.0 - out.min.0 + 1]" in text, text


@pytest.mark.parametrize(("call", "message"), [
    (lambda g, y, x: g.reorder_storage(x), r"name each dimension of g once, outermost first; "
                                           r"its dimensions are y, x"),
    (lambda g, y, x: g.reorder_storage(x, x), "name each dimension of g once"),
    (lambda g, y, x: g.reorder_storage(x, halo.Var("z")), "name each dimension of g once"),
])
def test_not_a_permutation_is_refused(call, message):
    _, g, _, (y, x) = _transpose_blur()
    with pytest.raises(halo.ScheduleError, match=message):
        call(g, y, x)


def test_outputs_and_inlined_funcs_have_no_storage_to_reorder():
    _, g, out, (y, x) = _transpose_blur()
    out.reorder_storage(x, y)
    with pytest.raises(halo.ScheduleError, match=r"out.reorder_storage\(x, y\): out is an "
                       "output of the pipeline"):
        out.lower()
    _, g, out, (y, x) = _transpose_blur()
    g.compute_inline().reorder_storage(x, y)
    with pytest.raises(halo.ScheduleError, match=r"g.reorder_storage\(x, y\): g is computed "
                       "inline, so it has no storage"):
        out.lower()


def test_the_order_as_defined_is_no_reorder():
    _, g, out, (y, x) = _transpose_blur()
    g.compute_root().reorder_storage(y, x)
    assert g.schedule.storage_order is None
    assert "reorder_storage" not in halo.schedule_source(out)


def test_a_tensorized_operand_must_keep_its_last_dimension_contiguous():
    i, j, io, jo, ii, ji = halo.vars("i j io jo ii ji")
    a = halo.ImageParam(halo.float32, 2, "a")
    b = halo.ImageParam(halo.float32, 2, "b")
    k = halo.RDom((0, 8), name="k")
    bt, c = halo.Func("bt"), halo.Func("c")
    bt[i, j] = b[i, j]
    c[i, j] = 0.0
    c[i, j] += a[i, k] * bt[k, j]
    lanes = halo.Target().natural_vector_size(halo.float32)
    mm = intrinsics.fma_outer_product(2, lanes, 8)
    c.tile(i, j, io, jo, ii, ji, 2, lanes).tensorize(ii, mm)
    c.update(0).tile(i, j, io, jo, ii, ji, 2, lanes).reorder(io, jo, ii, ji, k).tensorize(ii, mm)
    bt.compute_root().reorder_storage(j, i)
    with pytest.raises(halo.ScheduleError, match=r"bt.reorder_storage\(...\): bt is an operand "
                       "of intrinsic .* reads its last dimension contiguously"):
        c.lower()


def test_reorder_storage_prints_and_round_trips():
    def make():
        inp, g, out, (y, x) = _transpose_blur()
        return inp, g, out, (y, x)
    _, g, out, (y, x) = make()
    g.compute_root().reorder_storage(x, y)
    assert "g.reorder_storage(x, y)" in halo.schedule_source(out)
    _, _, fresh, _ = make()
    apply_json(fresh, schedule_to_json(out))
    assert str(fresh.lower()) == str(out.lower())
    assert Environment.of([fresh]).funcs["g"].schedule.storage_order == ("x", "y")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_a_transposed_shared_panel_compiles_for_the_gpu(tmp_path):
    *_, C, funcs = matmul.algorithm()
    matmul.gpu_schedule(funcs, tile=32, register_tile=4, depth=8, stages=2, a_by_column=True)
    source = C.compile(target=halo.Target("cuda", arch="sm_90")).function.kernels_source
    # the panel's rows (i) are contiguous: 32 rows, padded by 4 (16 bytes)
    assert "A_shared[" in source and "* 36)" in source
    cu = tmp_path / "t.cu"
    cu.write_text(PRELUDE + source)
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", str(cu), "-o", str(tmp_path / "t.ptx")],
                   check=True, capture_output=True)
