"""Arrays of a pipeline that runs on a GPU: NumPy arrays copied to and from the device,
GPU arrays used in place.

A GPU array is anything with `__cuda_array_interface__` (PyTorch CUDA tensors, CuPy
arrays, PyCUDA GPUArrays) or with `__dlpack__` of CUDA memory (`dlpack.py`): a
`DeviceArray` records its pointer, shape and strides, and the pipeline reads or writes
that memory directly (inputs, and outputs passed as `out=`). A NumPy input is copied to a
device buffer of the same (C-contiguous) layout before the call; a NumPy output is
computed in a device buffer and copied back after it. Every device buffer made here for
one call is freed when the call ends, also when it fails; an output halo returns on the
device (`DeviceArray.empty`) lives as long as the DeviceArray (or the caller's array
made from it, `as_kind_of`).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from halo.backends.cuda.device import cuda_driver
from halo.errors import InputError
from halo.lang.environment import offers_cuda_dlpack
from halo.runtime.dlpack import DLPackView

# Kernels index buffers with 32-bit integers (GPUs compute them at full speed).
MAX_ELEMENTS = 2**31 - 1


@dataclass(frozen=True)
class DeviceArray:
    """GPU memory as a pipeline sees it (strides in bytes, as NumPy's); `owner` keeps it
    alive. What a pipeline returns on the device (`halo.DeviceArray`) when its inputs are
    GPU arrays of no library halo knows: other libraries take it in place through
    `__cuda_array_interface__` (`torch.as_tensor(a, device="cuda")`, `cupy.asarray(a)`);
    `numpy()` copies it to the host."""
    pointer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    readonly: bool
    owner: object

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "strides": self.strides,
                "data": (self.pointer, self.readonly), "version": 3}

    @classmethod
    def empty(cls, shape: tuple[int, ...], dtype: np.dtype) -> DeviceArray:
        """A new C-contiguous array in device memory, freed with the DeviceArray."""
        dtype = np.dtype(dtype)
        allocation = cuda_driver().mem_alloc(max(int(np.prod(shape)) * dtype.itemsize, 1))
        return cls(int(allocation), tuple(shape), _contiguous_strides(shape, dtype), dtype,
                   False, allocation)

    def numpy(self) -> np.ndarray:
        """A copy in host memory."""
        host = np.empty(self.shape, self.dtype)
        if self.strides != _contiguous_strides(self.shape, self.dtype):
            raise InputError(f"DeviceArray.numpy() copies C-contiguous arrays; this one has "
                             f"strides {self.strides}: copy it with the library it came from")
        if host.nbytes:
            cuda_driver().memcpy_dtoh(host, self.pointer)
        return host


def _contiguous_strides(shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, ...]:
    strides, step = [], dtype.itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def is_device_array(a: object) -> bool:
    if type(a) is np.ndarray or isinstance(a, DeviceArray):  # (no interface to build)
        return isinstance(a, DeviceArray)
    return hasattr(a, "__cuda_array_interface__") or offers_cuda_dlpack(a)


def as_device_array(a: object, what: str) -> DeviceArray | None:
    """`a` as a DeviceArray where it is a GPU array (through `__cuda_array_interface__`,
    else DLPack), else None; `what` names it in errors. The interface is read once: a
    PyTorch tensor builds it anew at each read, microseconds each."""
    if type(a) is np.ndarray:
        return None
    if isinstance(a, DeviceArray):  # (its fields as they are: no interface to build)
        _checked(a.pointer, a.shape, a.strides, a.dtype, a.readonly, a.owner, what)
        return a
    interface = getattr(a, "__cuda_array_interface__", None)
    if interface is not None:
        dtype, shape = np.dtype(interface["typestr"]), tuple(int(s) for s in interface["shape"])
        pointer, readonly = interface["data"]
        strides = interface.get("strides")
        strides = _contiguous_strides(shape, dtype) if strides is None else \
            tuple(int(s) for s in strides)
        return _checked(int(pointer), shape, strides, dtype, bool(readonly), a, what)
    if not offers_cuda_dlpack(a):
        return None
    view = DLPackView(a)
    if view.problem:
        raise InputError(f"{what} is a GPU array of {view.problem}, which halo has no "
                         "type for; pass an array of a halo dtype")
    return _checked(view.pointer, view.shape, view.strides, view.dtype, False,
                    (a, view.capsule), what)


def device_array(a: object, what: str) -> DeviceArray:
    """`a`, a GPU array (`is_device_array`), as a DeviceArray; `what` names it in errors."""
    found = as_device_array(a, what)
    if found is None:
        raise InputError(f"{what} is not a GPU array (it offers neither "
                         "__cuda_array_interface__ nor DLPack of CUDA memory)")
    return found


def as_kind_of(result: DeviceArray, example: object) -> object:
    """`result` as an array of `example`'s library (a PyTorch tensor, a CuPy array)
    sharing its memory, where halo knows the library; else `result` itself."""
    library = type(example).__module__.split(".")[0]
    module = sys.modules.get(library)
    if library == "torch" and module is not None:
        return module.as_tensor(result, device="cuda")
    if library == "cupy" and module is not None:
        return module.asarray(result)
    return result


def _checked(pointer: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype,
             readonly: bool, owner: object, what: str) -> DeviceArray:
    if pointer % dtype.itemsize or any(s % dtype.itemsize for s in strides):
        raise InputError(f"{what} is a GPU array whose elements are not aligned to their "
                         f"size ({dtype.itemsize} bytes); pass a contiguous copy")
    if shape and shape[-1] > 1 and strides[-1] != dtype.itemsize:
        raise InputError(f"{what} is a GPU array whose last dimension is not contiguous "
                         f"(stride {strides[-1]} bytes, shape {shape}); kernels read "
                         "neighbouring last indices as neighbouring elements: pass a "
                         "contiguous copy (x.contiguous() in PyTorch, "
                         "cupy.ascontiguousarray(x))")
    return DeviceArray(pointer, shape, strides, dtype, readonly, owner)


def check_size(a: np.ndarray | DeviceArray, what: str) -> None:
    """Refuse an array whose elements a 32-bit index can't reach."""
    span = 1 + sum((e - 1) * abs(s) // a.itemsize for e, s in zip(a.shape, a.strides,
                                                                      strict=True) if e > 0)
    if span > MAX_ELEMENTS:
        raise InputError(f"{what} spans {span} elements; GPU kernels index with 32-bit "
                         f"integers, so at most {MAX_ELEMENTS}: split the work into pieces")


class DeviceCall:
    """The device buffers of one call: `pointer(a)` for each input and output, the call,
    then `finish()` to copy NumPy outputs back; `close()` frees everything."""

    def __init__(self) -> None:
        self._allocations: list[object] = []
        self._copy_back: list[tuple[np.ndarray, object]] = []

    def input(self, a: np.ndarray | DeviceArray) -> int:
        if isinstance(a, DeviceArray):
            return a.pointer
        allocation = self._alloc(a.nbytes)
        if a.nbytes:
            cuda_driver().memcpy_htod(allocation, np.ascontiguousarray(a))
        return int(allocation)

    def output(self, a: np.ndarray | DeviceArray) -> int:
        if isinstance(a, DeviceArray):
            return a.pointer
        allocation = self._alloc(a.nbytes)
        self._copy_back.append((a, allocation))
        return int(allocation)

    def finish(self) -> None:
        for a, allocation in self._copy_back:
            if a.nbytes:
                cuda_driver().memcpy_dtoh(a, allocation)

    def close(self) -> None:
        for allocation in self._allocations:
            allocation.free()
        self._allocations.clear()

    def _alloc(self, nbytes: int):
        allocation = cuda_driver().mem_alloc(max(nbytes, 1))
        self._allocations.append(allocation)
        return allocation
