"""GPU schedules no GPU can run are refused when lowered for Target('cuda', arch=...)
(no GPU needed): each message names the Func and says what would be legal."""
import numpy as np
import pytest

import halo

CUDA = halo.Target("cuda", arch="sm_90")


def _blur():
    x, y = halo.vars("x y")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    bh, out = halo.Func("bh"), halo.Func("out")
    bh[y, x] = inp[y, x] + inp[y, x + 1]
    out[y, x] = bh[y, x] + bh[y + 1, x]
    return x, y, inp, bh, out


def test_a_stage_without_gpu_binding_shows_the_gpu_tile_that_places_it():
    x, y, _, bh, out = _blur()
    bh.compute_root()
    out.gpu_tile(y, x, *halo.vars("yo xo yi xi"), 8, 8)
    with pytest.raises(halo.ScheduleError,
                       match=r"bh binds no loop to the GPU.*bh.gpu_tile\(y, x, yo, xo, yi, xi, "
                             r"8, 32\)"):
        out.compile(target=CUDA)


def test_an_output_without_gpu_binding_is_refused():
    _, _, _, _, out = _blur()
    with pytest.raises(halo.ScheduleError, match=r"out binds no loop to the GPU.*out.gpu_tile"):
        out.compile(target=CUDA)


def test_an_update_without_gpu_binding_is_named_as_the_update():
    x, xo, xi = halo.vars("x xo xi")
    f = halo.Func("f")
    f[x] = x
    f[x] = f[x] + 1
    f.gpu_tile(x, xo, xi, 32)
    with pytest.raises(halo.ScheduleError, match=r"f.update\(0\) binds no loop to the GPU"):
        f.compile(target=CUDA)


def test_more_than_1024_threads_a_block_is_refused():
    x, y, _, _, out = _blur()
    out.gpu_tile(y, x, *halo.vars("yo xo yi xi"), 64, 32)
    with pytest.raises(halo.ScheduleError, match=r"out: its GPU blocks would have 2048 threads"):
        out.compile(target=CUDA)


def test_threads_of_the_producer_count_in_the_block():
    x, y, _, bh, out = _blur()
    yo, xo, yi, xi = halo.vars("yo xo yi xi")
    out.gpu_tile(y, x, yo, xo, yi, xi, 31, 32)
    bh.compute_at(out, xo).gpu_threads(y, x)  # 32 x 32 rows of bh: 1024 threads, legal
    out.compile(target=CUDA)
    out2 = _blur()
    x, y, _, bh, out = out2
    out.gpu_tile(y, x, yo, xo, yi, xi, 32, 32)
    bh.compute_at(out, xo).gpu_threads(y, x)  # 33 x 32 rows: too many
    with pytest.raises(halo.ScheduleError, match="1056 threads"):
        out.compile(target=CUDA)


def test_shared_memory_over_the_limit_is_refused():
    """Past 48 KB a kernel takes its shared memory at launch, up to what its architecture
    gives a block: 227 KB on sm_90, 64 KB on sm_75."""
    x, y, _, bh, out = _blur()
    yo, xo, yi, xi, yii = halo.vars("yo xo yi xi yii")
    out.tile(y, x, yo, xo, yi, xi, 1024, 64).split(yi, yi, yii, 64)
    out.reorder(yo, xo, yii, yi, xi).gpu_blocks(yo, xo).gpu_threads(yi, xi)
    bh.compute_at(out, xo).store_in("shared")
    # 1025 rows of 64 floats, each padded by 16 bytes (no bank conflicts down a column)
    with pytest.raises(halo.ScheduleError, match=r"shared memory \(bh 278800 bytes\), more "
                                                 r"than the 232448 a block may hold"):
        out.compile(target=CUDA)
    x, y, _, bh, out = _blur()
    out.tile(y, x, yo, xo, yi, xi, 128, 128).split(yi, yi, yii, 32)
    out.reorder(yo, xo, yii, yi, xi).gpu_blocks(yo, xo).gpu_threads(yi, xi)
    bh.compute_at(out, xo).store_in("shared")
    kernels = out.compile(target=CUDA).function.kernels  # 129 x 132 floats: 68112 bytes
    assert {k.dynamic_shared for k in kernels} == {68224}  # (aligned to 128 bytes)
    with pytest.raises(halo.ScheduleError, match=r"\(bh 68112 bytes\), more than the 65536"):
        out.compile(target=halo.Target("cuda", arch="sm_75"))


def test_a_thread_loop_outside_every_block_loop_is_refused():
    x, xo, xi = halo.vars("x xo xi")
    f = halo.Func("f")
    f[x] = x * 2
    f.split(x, xo, xi, 32).gpu_threads(xi)
    with pytest.raises(halo.ScheduleError, match="thread loop f.s0.x.xi is outside every GPU "
                                                 "block loop"):
        f.compile(target=CUDA)


def test_a_thread_extent_without_constant_bound_is_refused():
    x, y, _, _, out = _blur()
    out.gpu_blocks(y).gpu_threads(x)
    with pytest.raises(halo.ScheduleError, match="can't bound by a constant"):
        out.compile(target=CUDA)


@pytest.mark.parametrize(("scope", "where", "message"), [
    ("local", "block", r"computed at a GPU block loop, where registers hold it only if each "
                       r"thread reads and writes a part of its own; one access runs in threads "
                       r"\(x: 8, y: 8\) and another in threads \(x: 8, y: 9\)"),
    ("shared", "thread", "computed inside GPU thread loops, where its buffer can't be in "
                         "'shared' memory"),
    ("shared", "root", "computed at root, outside every GPU block loop"),
])
def test_a_memory_scope_that_does_not_suit_the_level_is_refused(scope, where, message):
    x, y, _, bh, out = _blur()
    yo, xo, yi, xi = halo.vars("yo xo yi xi")
    out.gpu_tile(y, x, yo, xo, yi, xi, 8, 8)
    if where == "block":
        bh.compute_at(out, xo).gpu_threads(y, x)
    elif where == "thread":
        bh.compute_at(out, xi)
    else:
        bh.compute_root().gpu_tile(y, x, yo, xo, yi, xi, 8, 8)
    bh.store_in(scope)
    with pytest.raises(halo.ScheduleError, match=rf"bh.store_in\('{scope}'\): bh is {message}"):
        out.compile(target=CUDA)


def test_block_loops_inside_another_kernel_are_refused():
    x, y, _, bh, out = _blur()
    yo, xo, yi, xi = halo.vars("yo xo yi xi")
    out.gpu_tile(y, x, yo, xo, yi, xi, 8, 8)
    bh.compute_at(out, xo).gpu_tile(y, x, yo, xo, yi, xi, 2, 2)
    with pytest.raises(halo.ScheduleError, match="bh: loop bh.s0.y.yo is bound to GPU blocks "
                                                 "but runs inside a GPU block loop"):
        out.compile(target=CUDA)


def test_a_gpu_array_passed_to_a_host_pipeline_is_refused():
    class FakeGpuArray:
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (256, False),
                                    "version": 3, "strides": None}
    x = halo.Var("x")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x]
    with pytest.raises(halo.InputError, match="input inp is a GPU array, but this pipeline "
                                              "was compiled for the host"):
        f.realize((4,), inputs={inp: FakeGpuArray()})
    with pytest.raises(halo.InputError, match="dtype float64"):
        f.realize((4,), inputs={inp: type("G", (), {"__cuda_array_interface__": {
            "shape": (4,), "typestr": "<f8", "data": (256, False), "version": 3}})()})
    assert np.array_equal(f.realize((4,), inputs={inp: np.ones(4, np.float32)}), np.ones(4))


@pytest.mark.parametrize(("binding", "message"), [
    ("vthread", r"f: vthread loop xi runs inside GPU thread loops"),
    ("gpu_threads", r"f: thread loop xi runs inside another stage's GPU thread loops"),
    ("gpu_blocks", r"f: loop xi is bound to GPU blocks but runs inside GPU thread loops")])
def test_bindings_of_a_func_with_nothing_to_compute_are_still_checked(binding, message):
    """The update's domain is empty (r.x < 0 never holds), so f, computed inside its
    thread loop, computes an empty region and simplification drops its loops; the
    binding is refused all the same (found by `python -m halo.fuzz --target cuda`: a
    vthread inside thread loops went through)."""
    x, xo, xi, ro, ri = halo.vars("x xo xi ro ri")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f, out = halo.Func("f"), halo.Func("out")
    r = halo.RDom((0, 4), name="r")
    r.where(r.x < 0)
    f[x] = inp[x] * 2
    out[x] = 0.0
    out[r.x] += f[r.x]
    out.gpu_tile(x, xo, xi, 32)
    out.update(0).atomic().split(r.x, ro, ri, 2).gpu_blocks(ro).gpu_threads(ri)
    f.compute_at(out.update(0), ri).split(x, xo, xi, 2)
    getattr(f, binding)(xi)
    with pytest.raises(halo.ScheduleError, match=message):
        out.compile(target=CUDA)
