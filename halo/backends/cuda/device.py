"""The CUDA driver, through PyCUDA, imported only when GPU code runs or a GPU is asked
about (PyCUDA is optional: `pip install 'halo[cuda]'`), so machines without a GPU never
import it.

halo works in the device's primary context (`pycuda.autoprimaryctx`), the one the CUDA
runtime, and so PyTorch and CuPy, use: device pointers pass between them unchanged.
"""
from __future__ import annotations

from functools import cache
from types import ModuleType

from halo.errors import HaloError


@cache
def cuda_driver() -> ModuleType:
    """`pycuda.driver`, with the primary context of device 0 current."""
    try:
        import pycuda.autoprimaryctx  # noqa: F401  (makes the primary context current)
        import pycuda.driver as driver
    except ImportError as e:
        raise HaloError(f"running code for target 'cuda' needs PyCUDA ({e}); install it "
                        "with pip install 'halo[cuda]' on a machine with an NVIDIA GPU "
                        "and its driver") from None
    return driver


@cache
def cuda_compiler() -> ModuleType:
    """`pycuda.compiler` (nvcc, through PyCUDA)."""
    cuda_driver()
    import pycuda.compiler as compiler
    return compiler
