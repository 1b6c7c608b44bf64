"""Every GPU test pipeline (gpu_pipelines.py) on the GPU, against halo.reference: NumPy
arrays in and out, device arrays (PyTorch, CuPy) used in place, out= on the device."""
import copy
import gc
import importlib.util
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import halo
from halo.backends import cuda as cuda_backend

_spec = importlib.util.spec_from_file_location("gpu_pipelines",
                                               Path(__file__).with_name("gpu_pipelines.py"))
gpu_pipelines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_pipelines)
PIPELINES = gpu_pipelines.PIPELINES


def _check(got, want, dtype):
    if np.dtype(dtype) == np.float16:  # a fused multiply-add rounds once where NumPy twice
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    elif np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_matches_the_reference(name):
    out, inputs, shape = PIPELINES[name]()
    want = halo.reference(out, shape, inputs=inputs)
    got = out.realize(shape, inputs=inputs, target="cuda")
    assert isinstance(got, np.ndarray) and got.shape == want.shape
    _check(got, want, want.dtype)


@pytest.mark.parametrize("name", ["blur_shared", "two_kernels", "matmul_shared"])
def test_torch_tensors_are_used_in_place(name):
    torch = pytest.importorskip("torch")
    out, inputs, shape = PIPELINES[name]()
    want = halo.reference(out, shape, inputs=inputs)
    device_inputs = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
    result = torch.empty(shape, dtype=getattr(torch, str(want.dtype)), device="cuda")
    returned = out.realize(inputs=device_inputs, target="cuda", out=result)
    assert returned is result
    _check(result.cpu().numpy(), want, want.dtype)


def test_cupy_views_with_row_strides_are_read_in_place():
    cupy = pytest.importorskip("cupy")
    out, inputs, shape = PIPELINES["blur_shared"]()
    (inp, array), = inputs.items()
    wide = cupy.zeros((array.shape[0], array.shape[1] + 9), dtype=array.dtype)
    wide[:, 3:-6] = cupy.asarray(array)
    view = wide[:, 3:-6]  # rows farther apart than their length, an offset start
    got = out.realize(shape, inputs={inp: view}, target="cuda")  # a CuPy array, as view
    _check(cupy.asnumpy(got), halo.reference(out, shape, inputs=inputs), np.float32)
    with pytest.raises(halo.InputError, match="last dimension is not contiguous"):
        out.realize(shape, inputs={inp: wide[:, ::2]}, target="cuda")


def test_a_pipeline_of_two_outputs_runs_a_kernel_for_each():
    x, xo, xi = halo.vars("x xo xi")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    a, b = halo.Func("a"), halo.Func("b")
    a[x] = inp[x] * 2
    b[x] = inp[x] + 1
    a.gpu_tile(x, xo, xi, 32)
    b.gpu_tile(x, xo, xi, 64)
    data = np.arange(101, dtype=np.float32)
    got_a, got_b = halo.Pipeline([a, b]).realize((101,), inputs={inp: data}, target="cuda")
    np.testing.assert_array_equal(got_a, data * 2)
    np.testing.assert_array_equal(got_b, data + 1)


def test_wrong_dtype_of_a_device_array_is_refused_before_any_launch():
    torch = pytest.importorskip("torch")
    out, inputs, shape = PIPELINES["pointwise_1d"]()
    (inp, array), = inputs.items()
    with pytest.raises(halo.InputError, match="dtype float64"):
        out.realize(shape, inputs={inp: torch.zeros(array.shape, dtype=torch.float64,
                                                    device="cuda")}, target="cuda")


def test_a_region_too_small_is_refused_before_any_launch():
    out, inputs, shape = PIPELINES["blur_shared"]()
    (inp, array), = inputs.items()
    with pytest.raises(halo.HaloError, match="inp"):
        out.realize(shape, inputs={inp: array[:-1]}, target="cuda")


def test_target_reads_the_architecture_from_the_device():
    import pycuda.driver as cuda
    cuda.init()
    major, minor = cuda.Device(0).compute_capability()
    assert halo.Target("cuda").arch == f"sm_{major}{minor}"


def test_an_nvcc_error_is_an_internal_error_that_shows_the_source():
    from halo.backends.cuda.compiler import compile_cubin
    source = 'extern "C" __global__ void broken(float* x) { x[0] = undefined_name; }\n'
    with pytest.raises(halo.InternalError, match="undefined_name"):
        compile_cubin(source, halo.Target("cuda").arch)


def test_cubins_come_from_the_disk_cache_the_second_time():
    from halo.backends.cuda.compiler import compile_cubin
    from halo.backends.llvm import object_cache
    out, _, _ = PIPELINES["pointwise_1d"]()
    source = out.compile(target="cuda").function.cuda_source
    arch = halo.Target("cuda").arch
    first = compile_cubin(source, arch)
    hits = object_cache.stats["hits"]
    assert compile_cubin(source, arch) == first
    assert object_cache.stats["hits"] == hits + 1


def test_intermediate_device_buffers_are_freed():
    """Every device buffer a call allocates is freed by the end of the call. (Counted
    in the pipeline: the device's free memory is shared with whatever else runs.)"""
    out, inputs, shape = PIPELINES["two_kernels"]()
    kernel = out.compile(target="cuda")
    pipeline, allocated, freed = kernel.function, [], []
    alloc, free = pipeline._alloc, pipeline._free
    pipeline._alloc = lambda nbytes: allocated.append(alloc(nbytes)) or allocated[-1]
    pipeline._free = lambda pointer: freed.append(pointer) or free(pointer)
    for calls in range(1, 4):
        kernel(shape, **{k.name: v for k, v in inputs.items()})
        assert len(allocated) >= calls and sorted(freed) == sorted(allocated)
        assert not pipeline._allocations


@pytest.mark.parametrize("name", ["vectorized", "vectorized_shared", "vectorized_halves",
                                  "vectorized_doubles"])
def test_vector_accesses_of_misaligned_device_arrays(name):
    """Arrays that start one element past an aligned address: every 16-byte access is
    misaligned, and goes lane by lane (the address is tested when it runs)."""
    torch = pytest.importorskip("torch")
    out, inputs, shape = PIPELINES[name]()
    want = halo.reference(out, shape, inputs=inputs)
    (inp, array), = inputs.items()
    dtype = getattr(torch, str(array.dtype))
    view = torch.zeros(array.size + 1, dtype=dtype, device="cuda")[1:].view(array.shape)
    view.copy_(torch.from_numpy(array))
    result = torch.zeros(want.size + 1, dtype=dtype, device="cuda")[1:].view(shape)
    out.realize(inputs={inp: view}, target="cuda", out=result)
    _check(result.cpu().numpy(), want, want.dtype)


def test_a_pipeline_dropped_on_another_thread_is_unloaded_by_the_next_call():
    """A compile cache evicts pipelines inside the thread a compile runs on, where PyCUDA
    can't unload their modules (it warns "could not be cleaned up" and leaks them): they
    wait for the loading thread's next call, which unloads them there."""
    out, inputs, shape = PIPELINES["blur_shared"]()
    kernel = out.compile("cuda")
    f = kernel.function
    dropped = [copy.copy(kernel)]
    dropped[0].function = cuda_backend.compile_pipeline("dropped", kernel.lowered.stmt,
                                                        f.args, f.arch, f.options)
    want = halo.reference(out, shape, inputs=inputs)
    _check(dropped[0].run(shape, None, None, inputs, {})[0], want, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=dropped.clear)
        thread.start()
        thread.join()
        gc.collect()
        assert threading.get_ident() in cuda_backend._orphans
        _check(kernel.run(shape, None, None, inputs, {})[0], want, np.float32)
        assert threading.get_ident() not in cuda_backend._orphans
        gc.collect()
    assert not [w for w in caught if "cleaned up" in str(w.message)]
