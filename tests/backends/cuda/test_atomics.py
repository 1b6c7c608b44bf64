"""`.atomic()` updates in CUDA C: CUDA atomics on device (and shared) memory, a plain
read-modify-write on a thread's own array (CUDA has no atomics on local memory: the
launch fails)."""
import importlib.util
import re
from pathlib import Path

import halo

_spec = importlib.util.spec_from_file_location(
    "gpu_pipelines", Path(__file__).parents[2] / "gpu" / "gpu_pipelines.py")
gpu_pipelines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_pipelines)

CUDA = halo.Target("cuda", arch="sm_90")


def _source(build) -> str:
    out, _, _ = build()
    return out.compile(target=CUDA).function.kernels_source


def test_a_threads_own_array_is_updated_without_atomics():
    source = _source(gpu_pipelines.atomic_in_registers)
    assert "int32_t g[3];" in source  # the thread's own array
    assert "atomic" not in source
    assert re.search(r"g\[halo_mod<int32_t>\(g_s1_r_x, 3\)\] = g\[", source)


def test_device_memory_is_updated_with_atomics():
    assert "atomicAdd(&h[" in _source(gpu_pipelines.histogram)
    assert "halo_atomic_update(&m[" in _source(gpu_pipelines.atomic_max_and_float_sum)
