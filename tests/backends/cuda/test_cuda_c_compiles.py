"""The CUDA C emitted for every GPU test pipeline and every app's GPU schedule compiles
with nvcc (-ptx, sm_90), with no GPU: what CI checks of the CUDA backend. Skips where
nvcc is absent."""
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

import halo
from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp
from halo.backends.cuda.cuda_c import PRELUDE

_spec = importlib.util.spec_from_file_location(
    "gpu_pipelines", Path(__file__).parents[2] / "gpu" / "gpu_pipelines.py")
gpu_pipelines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_pipelines)

NVCC = shutil.which("nvcc")


def _app_outputs():
    """Each app's output with its GPU schedule (and conv_relu's for small batches)."""
    for app in (blur, conv_relu, harris, histogram, matmul, softmax, unsharp):
        *_, out, funcs = app.algorithm()
        app.gpu_schedule(funcs)
        yield app.__name__.split(".")[-1], out
    *_, out, funcs = conv_relu.algorithm()
    conv_relu.gpu_schedule_small_batch(funcs)
    yield "conv_relu_small_batch", out


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_every_gpu_pipeline_compiles_to_ptx(tmp_path):
    target = halo.Target("cuda", arch="sm_90")
    kernels = []
    for name, build in sorted(gpu_pipelines.PIPELINES.items()):
        out, _, _ = build()
        source = out.compile(target=target).function.kernels_source
        assert "__global__" in source
        kernels.append(source.replace("halo_pipeline_k", f"{name}_k"))
    for name, out in _app_outputs():
        source = out.compile(target=target).function.kernels_source
        kernels.append(source.replace("halo_pipeline_k", f"app_{name}_k"))
    # One module, so one nvcc run: the helpers once, then every pipeline's kernels.
    path = tmp_path / "all.cu"
    path.write_text(PRELUDE + "".join(kernels))
    # -O0 in the front end: the check is that the code compiles, not how fast it runs.
    result = subprocess.run([NVCC, "-ptx", "-arch=sm_90", "-Xcicc", "-O0", str(path), "-o",
                             str(tmp_path / "all.ptx")], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr + path.read_text()
    assert "warning" not in result.stderr, result.stderr  # (each would reach the user)
