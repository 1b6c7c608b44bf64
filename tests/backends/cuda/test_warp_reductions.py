"""Warp reductions: an associative update's reduction loop bound to GPU threads. What the
schedule accepts and refuses, what lowering refuses, and the CUDA C and PTX it gives
(tests/gpu runs the pipelines against the reference)."""
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import halo
from halo.backends.cuda.cuda_c import PRELUDE

_spec = importlib.util.spec_from_file_location(
    "gpu_pipelines", Path(__file__).parents[2] / "gpu" / "gpu_pipelines.py")
gpu_pipelines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_pipelines)

CUDA = halo.Target("cuda", arch="sm_90")


def _row_sums(update=None):
    """total[y] = sum_r inp[y, r] over 1000 columns (or `update(total, inp, r)`)."""
    y, yo, yi = halo.vars("y yo yi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 1000), name="r")
    total = halo.Func("total")
    total[y] = 0.0
    total[y] = update(total, inp, r, y) if update else total[y] + inp[y, r.x]
    total.gpu_tile(y, yo, yi, 4)
    return total, r


def test_the_lanes_combine_partials_by_shuffles_and_the_first_lane_writes():
    source = gpu_pipelines.warp_rows()[0].compile(target=CUDA).function.kernels_source
    assert "float total_s1_r_x_ri_partial[1];" in source
    offsets = re.findall(r"halo_shuffle_xor\(total_s1_r_x_ri_partial\[0\], (\d+), 32\)",
                         source)
    assert offsets[:5] == ["16", "8", "4", "2", "1"]
    assert "if (total_s1_r_x_ri == 0) {" in source
    assert "atomic" not in source


def test_narrow_integers_are_shuffled_as_ints():
    source = gpu_pipelines.warp_groups()[0].compile(target=CUDA).function.kernels_source
    assert "halo_shuffle_xor((uint8_t)halo_opaque_byte(m_s1_r_x_partial[0]), 4, 8)" in source
    assert "HALO_SHUFFLE_AS_INT(uint8_t)" in PRELUDE


def test_binding_reorders_the_reduction_loops_of_a_float_sum():
    total, r = _row_sums()
    ro, ri = halo.vars("ro ri")
    total.update(0).split(r.x, ro, ri, 32)
    with pytest.raises(halo.ScheduleError, match="swaps the reduction loops"):
        total.update(0).reorder(ri, ro)  # a serial float sum keeps its order
    total.update(0).gpu_threads(ri).reorder(ri, ro)  # a warp reduction regroups anyway
    assert [d.name for d in total.update(0)._stage().dims] == ["y", "ri", "ro"]


def test_an_update_that_isnt_associative_cant_bind_its_reduction_loop():
    total, r = _row_sums(lambda t, inp, r, y: t[y] * 0.5 + inp[y, r.x])
    with pytest.raises(halo.ScheduleError, match="unless the update is an associative"):
        total.update(0).gpu_threads(r.x)


@pytest.mark.parametrize("bind, message", [
    (lambda u, r: u.gpu_blocks(r.x), "binds one reduction loop to GPU threads, but r.x "
                                     r"\(GPU block\)"),
    (lambda u, r: u.split(r.x, "ro", "ri", 32).gpu_threads("ro", "ri"),
     "but ro \\(GPU thread\\), ri \\(GPU thread\\) are bound"),
    (lambda u, r: u.reorder(r.x, "y").gpu_threads(r.x, "y"),
     "so it must be the innermost thread loop"),
    (lambda u, r: u.reorder(r.x, "y").gpu_threads(r.x),
     "the loops inside it must be reduction loops that the left side doesn.t use, but y picks"),
])
def test_a_warp_reduction_has_one_reduction_loop_innermost(bind, message):
    total, r = _row_sums()
    with pytest.raises(halo.ScheduleError, match=message):
        bind(total.update(0), r)


def test_the_warp_must_be_a_power_of_two_up_to_32_lanes():
    total, r = _row_sums()
    ro, ri = halo.vars("ro ri")
    total.update(0).split(r.x, ro, ri, 24).gpu_threads(ri).reorder(ri, ro).gpu_blocks("y")
    with pytest.raises(halo.ScheduleError,
                       match="extent must be a constant power of two up to 32.*it is 24"):
        total.compile(target=CUDA)


def test_the_lanes_must_be_an_aligned_part_of_a_warp():
    y, x, yo, xo, yi, xi, ro, ri = halo.vars("y x yo xo yi xi ro ri")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 100), name="r")
    total = halo.Func("total")
    total[y] = 0.0
    total[y] = total[y] + inp[y, r.x]
    out = halo.Func("out")
    out[y, x] = total[y] + x
    out.gpu_tile(y, x, yo, xo, yi, xi, 1, 24)  # blocks 24 threads wide
    total.compute_at(out, xo)
    total.update(0).split(r.x, ro, ri, 16).gpu_threads(ri).reorder(ri, ro)
    with pytest.raises(halo.ScheduleError, match="multiple of 16.*make it 24"):
        out.compile(target=CUDA)


@pytest.mark.parametrize("bind, message", [
    (lambda u, r: u.gpu_threads(r.y), "r.y picks the point the update writes"),
    (lambda u, r: u.reorder(r.x, r.y).gpu_threads(r.x), "but r.y picks the point"),
])
def test_every_lane_updates_the_same_point(bind, message):
    y = halo.Var("y")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 32), (0, 5), name="r")
    h = halo.Func("h")
    h[y] = 0.0
    h[r.y] = h[r.y] + inp[r.y, r.x]
    with pytest.raises(halo.ScheduleError, match=message):
        bind(h.update(0), r)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_shuffles_are_butterfly_shuffles_in_ptx(tmp_path):
    source = gpu_pipelines.warp_merge()[0].compile(target=CUDA).function.kernels_source
    cu = tmp_path / "warp.cu"
    cu.write_text(PRELUDE + source)
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", str(cu), "-o", str(tmp_path / "warp.ptx")],
                   check=True, capture_output=True)
    ptx = (tmp_path / "warp.ptx").read_text()
    assert re.search(r"shfl\.sync\.bfly\.b32", ptx)


def test_a_warp_reduction_lasts_as_long_as_its_reordered_loops():
    """A float sum's loops reordered under a warp reduction can't lose its binding: the
    loops would run the sum in another order."""
    ro, ri, t = halo.vars("ro ri t")
    for unbind in (lambda u: u.serial(ri), lambda u: u.unroll(ri),
                   lambda u: u.fuse(ri, ro, t)):
        total, r = _row_sums()
        update = total.update(0).split(r.x, ro, ri, 32).gpu_threads(ri).reorder(ri, ro)
        with pytest.raises(halo.ScheduleError, match="swaps the reduction loops ro and ri"):
            unbind(update)
        assert [d.name for d in update._stage().dims] == ["y", "ri", "ro"]


def test_a_loop_fused_from_a_pure_variable_picks_the_point():
    t = halo.Var("t")
    total, r = _row_sums()
    with pytest.raises(halo.ScheduleError, match="reduction loop t picks the point"):
        total.update(0).fuse("y", r.x, t).gpu_threads(t)


def test_a_max_of_a_wrapping_sum_is_no_reduction():
    """max(f + e, f) is f + max(e, 0) for floats only: uint8 sums wrap."""
    y = halo.Var("y")
    inp = halo.ImageParam(halo.uint8, 2, "inp")
    r = halo.RDom((0, 2), name="r")
    f = halo.Func("f")
    f[y] = halo.cast(halo.uint8, 0)
    f[y] = halo.max(f[y] + inp[y, r.x], f[y])
    assert not f.update(0)._order_free()
    with pytest.raises(halo.ScheduleError, match="unless the update is an associative"):
        f.update(0).gpu_threads(r.x)


def test_a_specialization_may_reduce_by_warps_where_the_stage_is_atomic():
    y, ro, ri = halo.vars("y ro ri")
    p = halo.Param(halo.float32, "p")
    total, r = _row_sums(lambda t, inp, r, y: t[y] + inp[y, r.x] * p)
    total.update(0).split(r.x, ro, ri, 32)
    total.update(0).specialize(p > 0).gpu_blocks(y).gpu_threads(ri)
    total.update(0).atomic().gpu_blocks(y).gpu_threads(ri)
    kernels = total.compile(target=CUDA).function.kernels_source.split("__global__")[1:]
    update = [k for k in kernels if "total_s1" in k]
    assert sorted(("halo_shuffle_xor" in k, "atomicAdd" in k) for k in update) == \
        [(False, True), (True, False)]


def test_an_atomic_producer_inside_the_warp_loop_leaves_it_a_warp_reduction():
    out, _, _ = gpu_pipelines.warp_over_an_atomic_producer()
    source = out.compile(target=CUDA).function.kernels_source
    assert "halo_shuffle_xor(total_s1_r_x_ri_partial[0], 1, 2)" in source


def test_an_update_its_predicate_empties_is_left_as_it_is():
    y = halo.Var("y")
    inp = halo.ImageParam(halo.int32, 2, "inp")
    r = halo.RDom((0, 1), (0, 3), name="r")
    r.where(r.y < r.x)  # never holds: lowering drops the update
    f = halo.Func("f")
    f[y] = 0
    f[y] += inp[y, r.y]
    out = halo.Func("out")
    out[y] = f[y]
    out.gpu_blocks(y)
    f.compute_at(out, y)
    f.update(0).gpu_threads(r.x)
    assert "halo_shuffle_xor" not in out.compile(target=CUDA).function.kernels_source


def test_a_sum_regrouped_with_subtractions_is_still_a_sum():
    """Inlined and simplified, the update reads `total + a * 2 - b * 4`: the warp
    reduction takes it as `total + (a * 2 - b * 4)` (GPU fuzzer, seed 20261411, whose
    schedule lowering refused with an InternalError)."""
    out, *_ = gpu_pipelines.PIPELINES["warp_over_a_regrouped_difference"]()
    source = out.compile(target=CUDA).function.kernels_source
    assert "halo_shuffle_xor(total_s1_r_x_ri_partial[0], 2, 4)" in source
