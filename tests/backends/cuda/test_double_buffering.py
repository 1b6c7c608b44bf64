"""Double buffering (`f.double_buffer(stages)`): the loop nest it makes, the CUDA C and PTX
of its asynchronous copies, what it refuses, and how a schedule with it prints and
round-trips (tests/gpu runs the pipelines against the reference)."""
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import halo
from apps import conv_relu, matmul
from halo.backends.cuda.cuda_c import PRELUDE
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.visitor import walk
from halo.lang.environment import Environment
from halo.lang.schedule_files import apply_json, schedule_to_json
from halo.lower.double_buffering import GPU_ASYNC_COMMIT, GPU_ASYNC_COPY, GPU_ASYNC_WAIT
from halo.lower.pipeline import lower

_spec = importlib.util.spec_from_file_location(
    "gpu_pipelines", Path(__file__).parents[2] / "gpu" / "gpu_pipelines.py")
gpu_pipelines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_pipelines)

CUDA = halo.Target("cuda", arch="sm_90")
NVCC = shutil.which("nvcc")


def _lowered(out, stop_after="double_buffering"):
    return lower(Environment.of([out]), CUDA, stop_after=stop_after).stmt


def _calls(stmt, name):
    return [x for x in walk(stmt) if isinstance(x, n.Call) and x.name == name]


@pytest.mark.parametrize("stages", [2, 3])
def test_the_buffer_has_a_slot_per_stage_and_the_loop_waits_then_fills_ahead(stages):
    out, _, _ = gpu_pipelines.double_buffered(stages=stages)
    before = _lowered(out, "storage_flattening")
    after = _lowered(out)
    size = next(a.size.value for a in walk(before)
                if isinstance(a, n.Allocate) and a.name == "inp_shared")
    slot = -(-size // 32) * 32  # 128 bytes of float32
    # (each copy of the kernel, one per tail strategy's branch, has its own)
    allocates = [a for a in walk(after) if isinstance(a, n.Allocate) and a.name == "inp_shared"]
    assert allocates
    for allocate in allocates:
        assert allocate.size.value == stages * slot
        # the first stages - 1 steps before the loop, then one a step: a commit each
        assert len(_calls(allocate, GPU_ASYNC_COMMIT)) == stages
        assert [c.args[0].value for c in _calls(allocate, GPU_ASYNC_WAIT)] == [stages - 2]
        loop = next(x for x in walk(allocate) if isinstance(x, n.For) and x.name.endswith(".xo"))
        first = loop.body.stmts[0]
        assert isinstance(first, n.Evaluate) and first.value.name == GPU_ASYNC_WAIT
        # every copy of the producer (first steps, ahead) is asynchronous, the original gone
        copies = [s for s in walk(allocate) if isinstance(s, n.Store) and s.name == "inp_shared"]
        assert len(copies) == stages and all(s.value.name == GPU_ASYNC_COPY for s in copies)
        assert not [x for x in walk(allocate) if isinstance(x, n.ProducerConsumer)
                    and x.name == "inp_shared"]
        # the loop reads the slot of its own step
        reads = [x for x in walk(loop) if isinstance(x, n.Load) and x.name == "inp_shared"]
        assert reads and all(f"(out.s0.x.xo - 0) % {stages} * {slot}" in expr_to_str(x.index)
                             for x in reads), \
            [expr_to_str(x.index) for x in reads]


def test_an_update_keeps_its_stores_synchronous():
    out, _, _ = gpu_pipelines.double_buffered_update()
    after = _lowered(out)
    assert not _calls(after, GPU_ASYNC_COPY)
    assert not _calls(after, GPU_ASYNC_WAIT)
    g = next(a for a in walk(after) if isinstance(a, n.Allocate) and a.name == "g")
    assert g.size.value % 3 == 0


def test_cuda_c_starts_copies_and_waits_for_them():
    source = gpu_pipelines.double_buffered()[0].compile(target=CUDA).function.kernels_source
    assert "halo_copy_async<1, false>(&inp_shared[" in source
    assert "halo_async_commit();" in source and "halo_async_wait<0>();" in source
    # a dense vector of 4 floats: one 16-byte copy, its alignment checked when it runs
    vectors = gpu_pipelines.double_buffered((7, 64), 16, 2, lanes=4, reach=0)[0]
    assert "halo_copy_async<4, true>" in vectors.compile(target=CUDA).function.kernels_source
    # halves are 2 bytes, which cp.async can't move: copied at once
    halves = gpu_pipelines.double_buffered((5, 45), dtype=gpu_pipelines.np.float16)[0]
    source = halves.compile(target=CUDA).function.kernels_source
    assert "halo_copy_async" not in source and "inp_shared[" in source


def test_a_constant_exterior_is_copied_or_zeroed():
    """conv_relu's zero-padded window: select(inside, image[...], 0) copies its element,
    or zeros outside the image."""
    *_, relu, funcs = conv_relu.algorithm()
    conv_relu.gpu_schedule(funcs, stages=2)
    source = relu.compile(target=CUDA).function.kernels_source
    assert re.search(r"halo_copy_async_or_zero<1>\(&image_constant_exterior\d+\[.*\], "
                     r"&image\[.*\], .*image_extent", source)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_ptx_has_asynchronous_copies(tmp_path):
    A, B, C, funcs = matmul.algorithm()
    matmul.gpu_schedule(funcs, tile=32, register_tile=4, depth=8, stages=3)
    vectors = gpu_pipelines.double_buffered((7, 64), 16, 2, lanes=4, reach=0)[0]
    *_, relu, conv = conv_relu.algorithm()
    conv_relu.gpu_schedule(conv, stages=2)
    sources = [f.compile(target=CUDA).function.kernels_source.replace(
        "halo_pipeline_k", f"k{i}_") for i, f in enumerate((C, vectors, relu))]
    cu = tmp_path / "double.cu"
    cu.write_text(PRELUDE + "".join(sources))
    subprocess.run([NVCC, "-ptx", "-arch=sm_90", str(cu), "-o", str(tmp_path / "double.ptx")],
                   check=True, capture_output=True)
    ptx = (tmp_path / "double.ptx").read_text()
    assert re.search(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4;", ptx)
    assert re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16;", ptx)
    assert re.search(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4, %r\d+;", ptx)
    assert "cp.async.commit_group" in ptx and "cp.async.wait_group 1" in ptx
    # a copy whose alignment is tested when it runs goes lane by lane out of line, so
    # the aligned path branches around it (no lanes' loads predicated into it), and the
    # call takes no local memory
    assert re.search(r"call\.uni\s*\n?\s*_Z\d+halo_copy_each", ptx)
    assert ".local" not in ptx


def test_the_tensor_core_panels_of_an_aligned_twin_are_copied_without_tests():
    """A global row may start anywhere, so the general kernel tests each 16-byte copy;
    its twin, launched for calls whose buffers and sizes are multiples of 16 bytes,
    proves every copy of A and B aligned."""
    *_, funcs = matmul.algorithm_fp16()
    matmul.gpu_schedule_tensor_core(funcs)
    function = funcs["C"].compile(target=CUDA).function
    for source, aligned in ((function.kernels_source, False),
                            (function.aligned_kernels_source, True)):
        kernels = {re.match(r".*?(halo_pipeline_\w+)\(", k, re.S)[1]: k
                   for k in source.split('extern "C"')[1:]}
        assert "halo_pipeline_k0" in kernels
        for kernel in kernels.values():
            tested = re.findall(r"halo_copy_async<8, true>\(&[AB]_shared", kernel)
            untested = re.findall(r"halo_copy_async<8, false>\(&[AB]_shared", kernel)
            assert (untested and not tested) if aligned else (tested and not untested)


def _staged(place, stages=2):
    """out's block walks its columns 8 at a time; inp staged in shared memory by
    `place(staged, out, loops)`."""
    y, x, yo, yi, xo, xi = halo.vars("y x yo yi xo xi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    out = halo.Func("out")
    out[y, x] = inp[y, x] * 2
    out.split(y, yo, yi, 4).split(x, xo, xi, 8).reorder(yo, xo, yi, xi)
    out.gpu_blocks(yo).gpu_threads(yi, xi)
    staged = inp.cache_read("shared", [out])
    place(staged, out, (yo, xo, yi, xi))
    staged.double_buffer(stages)
    return out, staged


@pytest.mark.parametrize(("place", "message"), [
    (lambda s, o, v: s.compute_at(o, v[0]),
     "is computed at gpu_block loop yo; double buffering needs it computed and stored at a "
     "serial loop inside the GPU blocks"),
    (lambda s, o, v: s.compute_at(o, v[3]), "is computed inside GPU thread loops"),
    (lambda s, o, v: s.compute_at(o, v[1]).store_in("local"),
     "is stored in 'local' memory; double buffering is for buffers in the block's shared"),
    (lambda s, o, v: s.compute_at(o, v[1]).store_at(o, v[0]),
     "is stored at another loop than it is computed at"),
    (lambda s, o, v: s.compute_root(), "is computed at root, outside every GPU block loop"),
])
def test_misplaced_double_buffers_are_refused(place, message):
    out, _ = _staged(place)
    with pytest.raises(halo.ScheduleError, match=re.escape(message)) as e:
        out.compile(target=CUDA)
    assert "inp_shared.double_buffer(...)" in str(e.value)


def test_the_host_refuses_double_buffering():
    out, _ = _staged(lambda s, o, v: s.compute_at(o, v[1]))
    with pytest.raises(halo.ScheduleError, match=r"inp_shared.double_buffer\(...\): double "
                       r"buffering overlaps .* needs Target\('cuda'\)"):
        out.compile()


def test_a_producer_that_reads_what_its_loop_writes_is_refused():
    """g's producer would run an iteration ahead of the h it reads, computed in the same
    loop."""
    y, x, yo, yi, xo, xi = halo.vars("y x yo yi xo xi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    h, g, out = halo.Func("h"), halo.Func("g"), halo.Func("out")
    h[y, x] = inp[y, x] + 1
    g[y, x] = h[y, x] * 2
    out[y, x] = g[y, x] - 1
    out.split(y, yo, yi, 4).split(x, xo, xi, 8).reorder(yo, xo, yi, xi)
    out.gpu_blocks(yo).gpu_threads(yi, xi)
    for f in (h, g):
        f.compute_at(out, xo).gpu_threads(y, x)
    g.double_buffer()
    with pytest.raises(halo.ScheduleError, match=r"g.double_buffer\(...\): g reads h, which "
                       r"is written in the same loop out.s0.x.xo, so g can't be computed an "
                       r"iteration ahead"):
        out.compile(target=CUDA)


def test_buffers_of_one_loop_take_the_same_number_of_stages():
    A, B, C, funcs = matmul.algorithm()
    matmul.gpu_schedule(funcs, tile=32, register_tile=4, depth=8, stages=2)
    env = Environment.of([C])
    env.funcs["B_shared"].double_buffer(3)
    with pytest.raises(halo.ScheduleError, match=r"A_shared.double_buffer\(2\) and "
                       r"B_shared.double_buffer\(3\): .* give them the same number of stages"):
        C.compile(target=CUDA)


@pytest.mark.parametrize("stages", [1, 9, 2.0, True, "2"])
def test_stages_must_be_an_int_from_2_to_8(stages):
    f = halo.Func("f")
    f[halo.Var("x")] = 1
    with pytest.raises(halo.ScheduleError, match=r"f.double_buffer\(.*\): stages must be an "
                       "int from 2 to 8"):
        f.double_buffer(stages)


def test_a_loop_of_one_iteration_leaves_the_func_as_it_is():
    """A serial loop of constant extent 1 is gone before lowering places buffers: no
    iterations to take turns, nothing refused."""
    y, x, yo, yi, xo, xi = halo.vars("y x yo yi xo xi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    out = halo.Func("out")
    out[y, x] = inp[y, x] * 2
    out.bound(x, 0, 8).split(y, yo, yi, 4).split(x, xo, xi, 8).reorder(yo, xo, yi, xi)
    out.gpu_blocks(yo).gpu_threads(yi, xi)
    staged = inp.cache_read("shared", [out])
    staged.compute_at(out, xo).double_buffer()
    stmt = _lowered(out)
    assert not _calls(stmt, GPU_ASYNC_COPY)
    assert "__global__" in out.compile(target=CUDA).function.kernels_source


@pytest.mark.parametrize("stages", [2, 3])
def test_a_double_buffer_prints_and_round_trips(stages):
    def make():
        A, B, C, funcs = matmul.algorithm()
        matmul.gpu_schedule(funcs, tile=32, register_tile=4, depth=8, stages=stages)
        return C
    out = make()
    call = "double_buffer()" if stages == 2 else f"double_buffer({stages})"
    source = halo.schedule_source(out)
    assert f"A_shared.{call}" in source and f"B_shared.{call}" in source
    fresh = matmul.algorithm()[2]
    apply_json(fresh, schedule_to_json(out))
    assert str(fresh.lower(CUDA)) == str(out.lower(CUDA))


def test_only_the_double_buffered_funcs_own_stores_are_asynchronous():
    """b1 is computed inside s2's producer and read there at once: its stores stay plain
    (tests/gpu/regressions has the pipelines the fuzzer found this with)."""
    c, y, x, xo, xi = halo.vars("c y x xo xi")
    in0 = halo.ImageParam(halo.float32, 3, "in0")
    b1, s2, s3 = halo.Func("b1"), halo.Func("s2"), halo.Func("s3")
    b1[c, y, x] = halo.boundary.mirror_image(in0)[c, y, x]
    s2[c, y, x] = b1[c, x, y]
    s3[c, y, x] = s2[c, y, x] + 1
    s3.split(x, xo, xi, 4).gpu_blocks(xo)
    s2.compute_at(s3, xi).double_buffer()
    b1.compute_at(s2, x)
    stores = [s for s in walk(_lowered(s3)) if isinstance(s, n.Store)]
    assert {s.name for s in stores if isinstance(s.value, n.Call)
            and s.value.name == GPU_ASYNC_COPY} <= {"s2"}
    assert [s for s in stores if s.name == "b1"]


def test_a_buffer_another_producer_of_its_loop_reads_is_filled_at_once():
    """s7's producer reads s4 in the same step ahead, before an asynchronous copy of s4
    would have landed: s4's stores stay plain (GPU fuzzer, seed 20261411, whose answers
    were wrong)."""
    y, x, xo, xi = halo.vars("y x xo xi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    s4, s7, out = halo.Func("s4"), halo.Func("s7"), halo.Func("out")
    s4[y, x] = inp[y, x]
    s7[y, x] = s4[y, x] * 2
    out[y, x] = s7[y, x] + 1
    out.split(x, xo, xi, 8).gpu_blocks(xo)
    s4.compute_at(out, xi).double_buffer()
    s7.compute_at(out, xi).double_buffer()
    stores = [s for s in walk(_lowered(out)) if isinstance(s, n.Store)]
    assert [s for s in stores if s.name == "s4"]
    assert not _calls(_lowered(out), GPU_ASYNC_COPY)
