"""Reading a DLPack capsule (halo/runtime/dlpack.py), checked here on NumPy's own
exporter (host memory, so no GPU is needed): pointer, shape, strides in bytes, dtype."""
import numpy as np
import pytest

from halo.lang.environment import offers_cuda_dlpack
from halo.runtime.dlpack import DLPackView


class Exporter:
    """An array that offers only DLPack, of the memory of a NumPy array."""

    def __init__(self, a, device=(2, 0)):
        self.a, self.device = a, device

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint16, np.int64,
                                   np.bool_])
def test_a_view_reads_pointer_shape_strides_and_dtype(dtype):
    a = np.zeros((5, 7), dtype=dtype)[1:, 2:]  # rows farther apart than their length
    view = DLPackView(Exporter(a))
    assert view.problem == ""
    assert view.dtype == a.dtype and view.shape == a.shape and view.strides == a.strides
    assert view.pointer == a.ctypes.data


def test_a_dtype_halo_has_no_type_for_is_a_problem():
    assert "DLPack dtype" in DLPackView(Exporter(np.zeros(3, np.complex64))).problem


def test_only_cuda_memory_counts_as_a_gpu_array():
    a = np.zeros(3, np.float32)
    assert not offers_cuda_dlpack(a)                       # NumPy: host memory
    assert offers_cuda_dlpack(Exporter(a, (2, 0)))         # kDLCUDA
    assert offers_cuda_dlpack(Exporter(a, (13, 0)))        # kDLCUDAManaged
    assert not offers_cuda_dlpack(Exporter(a, (1, 0)))     # kDLCPU
