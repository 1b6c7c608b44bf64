"""Reading a DLPack capsule (halo/runtime/dlpack.py), checked here on NumPy's own
exporter (host memory, so no GPU is needed): pointer, shape, strides in bytes, dtype; and
the checks of a DeviceArray passed in."""
import numpy as np
import pytest

from halo.errors import InputError
from halo.lang.environment import offers_cuda_dlpack
from halo.runtime.device_arrays import DeviceArray, device_array, is_device_array
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


def test_a_device_array_passed_in_is_checked_like_any_gpu_array():
    f32 = np.dtype(np.float32)
    good = DeviceArray(1024, (4, 4), (16, 4), f32, False, None)
    assert is_device_array(good) and device_array(good, "x") is good
    with pytest.raises(InputError, match="x is a GPU array whose elements are not aligned"):
        device_array(DeviceArray(1002, (4, 4), (16, 4), f32, False, None), "x")
    with pytest.raises(InputError, match="last dimension is not contiguous"):
        device_array(DeviceArray(1024, (4, 4), (16, 8), f32, False, None), "x")

    class Mapped(np.ndarray):  # host memory a GPU can also address (numba's mapped arrays)
        @property
        def __cuda_array_interface__(self):
            return {"shape": self.shape, "typestr": self.dtype.str, "strides": None,
                    "data": (self.ctypes.data, False), "version": 3}
    assert is_device_array(np.zeros(3).view(Mapped)) and not is_device_array(np.zeros(3))
