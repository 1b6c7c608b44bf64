"""compile_cubin with the real nvcc and ptxas and no GPU: PyCUDA's `compile` stood in for
by one that runs nvcc the same way (options, -ptx, a warning for whatever nvcc says)."""
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from halo.backends.cuda import compiler

NVCC, PTXAS = shutil.which("nvcc"), shutil.which("ptxas")


class _NvccLikePyCuda:
    """`pycuda.compiler`'s compile: nvcc to PTX, a UserWarning with what nvcc said when
    it succeeded but said something."""

    class CompileError(Exception):
        pass

    def __init__(self, tmp: Path):
        self.tmp = tmp

    def compile(self, source, options, arch, no_extern_c, cache_dir, target):
        path = self.tmp / "kernel.cu"
        path.write_text(source)
        result = subprocess.run([NVCC, f"-arch={arch}", "--ptx", *options, str(path), "-o",
                                 str(self.tmp / "kernel.ptx")], capture_output=True,
                                text=True, check=False)
        if result.returncode:
            raise self.CompileError(result.stderr)
        if result.stderr.strip():
            warnings.warn("The CUDA compiler succeeded, but said the following:\n" +
                          result.stderr, stacklevel=2)
        return (self.tmp / "kernel.ptx").read_bytes()


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """compile_cubin through `_NvccLikePyCuda`, the disk cache off; skips where the CUDA
    toolkit is not installed (CI and development machines have it)."""
    if NVCC is None or PTXAS is None:
        pytest.skip("nvcc and ptxas are not installed")
    monkeypatch.setenv("HALO_CACHE_DIR", "off")
    nvcc = _NvccLikePyCuda(tmp_path)
    monkeypatch.setattr(compiler, "cuda_compiler", lambda: nvcc)
    monkeypatch.setattr(compiler, "cuda_driver", lambda: nvcc)
    return nvcc


def test_what_a_kernel_declares_and_never_uses_is_no_warning(stand_in):
    """A generated kernel may declare a let or a shared array it ends up not reading;
    nvcc's notes on that don't reach the user, and the cubin is built."""
    source = ('extern "C" __global__ void k(int* a) {\n'
              '    const int unused = 3;\n'
              '    __shared__ int written[32];\n'
              '    written[threadIdx.x] = 1;\n'
              '    a[threadIdx.x] = 2;\n}\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cubin = compiler.compile_cubin(source, "sm_90")
    assert cubin
    assert not caught, [str(w.message) for w in caught]
    with pytest.warns(UserWarning, match="never"):  # (what nvcc would have said)
        stand_in.compile(source, [], "sm_90", True, False, "ptx")


def test_fast_math_reaches_nvcc_and_not_ptxas(stand_in):
    """Target(fast_math=True)'s options: nvcc writes an exponential as the special-function
    unit's approximation with denormals flushed (no range reduction around it), and a
    division as an approximate one; ptxas, which doesn't take --use_fast_math, still
    builds the cubin. The default keeps CUDA's accurate expf and IEEE division."""
    source = ('extern "C" __global__ void k(float* a, float b) {\n'
              '    a[threadIdx.x] = expf(a[threadIdx.x]) / b;\n}\n')
    ptx = {}
    for fast in (False, True):
        options = compiler.nvcc_options(strict_float=False, fast_math=fast)
        assert compiler.compile_cubin(source, "sm_90", options)
        ptx[fast] = stand_in.compile(source, options, "sm_90", True, False, "ptx").decode()
    assert "ex2.approx.ftz.f32" in ptx[True] and "div.approx" in ptx[True]
    assert "div.rn.f32" in ptx[False] and "div.approx" not in ptx[False]
    assert ptx[True].count("\n") < ptx[False].count("\n")
    assert compiler.cache_key(source, "sm_90", compiler.nvcc_options(False, True)) != \
        compiler.cache_key(source, "sm_90", compiler.nvcc_options(False, False))
