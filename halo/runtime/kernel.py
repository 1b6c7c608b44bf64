"""`Kernel`: a compiled pipeline called on NumPy arrays.

A Kernel binds the arrays and scalars a user passes to the pipeline's inputs, allocates
(or checks) the outputs, runs the region checks that bounds inference wrote before any
code runs, and calls the function the backend compiled, without copying arrays whose last
dimension is contiguous and whose elements are aligned (others are copied).
"""
from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

from halo import backends
from halo.errors import InputError
from halo.ir.types import Type, int32
from halo.ir.values import checked_origin, checked_region, checked_scalar, checked_shape
from halo.lang.environment import Environment, bind
from halo.lang.inputs import masked_array_refusal
from halo.lower.bounds_inference import describe
from halo.lower.count_stores import COUNTS_BUFFER
from halo.lower.pipeline import Lowered
from halo.lru_cache import LRUCache
from halo.runtime.device_arrays import (
    DeviceArray,
    DeviceCall,
    as_device_array,
    as_kind_of,
    check_size,
    is_device_array,
)
from halo.runtime.host_checks import compile_checks
from halo.target import Target, TargetKind

MAX_EXTENT = int32.max_value()


class Kernel:
    """A compiled pipeline: `kernel(shape, **inputs)` or `kernel(out=array, **inputs)`,
    inputs passed by the names of their ImageParams and Params."""

    def __init__(self, lowered: Lowered, target: Target):
        self.lowered = lowered
        self.target = target
        self.output_names = [f.name for f in lowered.env.outputs]
        # Each output's type, found once (a Func's type is read off its definition).
        self._output_types = [f.type for f in lowered.env.outputs]
        self._checks = compile_checks(lowered.checks)
        self.function = backends.compile(lowered, target)
        self.buffer_names = [a.name for a in self.function.args if a.kind == "buffer"]
        self.scalar_names = [a.name for a in self.function.args if a.kind == "scalar"]
        # The scalars derived from arrays (extents, strides, mins): type and description.
        self._array_scalars = {a.name: (a.type, self._describe_scalar(a.name))
                               for a in self.function.args
                               if a.kind == "scalar" and a.name not in lowered.env.params}
        # {func name: stores} of the last call, with Target(count_stores=True).
        self.store_counts: dict[str, int] = {}
        # The checked scalar arguments of recent calls, by the layouts of their arrays
        # (shapes, strides) and their scalars: a call like one before skips the checks.
        self._checked_calls: LRUCache[list] = LRUCache(capacity=16)

    def for_environment(self, env: Environment) -> Kernel:
        """This kernel, binding its inputs through `env`: another build of the same
        program, whose Buffers hold other arrays and whose Params other defaults."""
        if env is self.lowered.env:
            return self
        kernel = copy.copy(self)
        kernel.lowered = replace(self.lowered, env=env)
        kernel.store_counts = {}
        return kernel

    def source(self) -> str:
        """The code the backend generated (LLVM IR for the host, CUDA C for cuda)."""
        return self.function.source()

    def __call__(self, shape=None, out=None, origin=None, **inputs):
        result = self.run(shape, out, origin, None, inputs)
        return result[0] if len(result) == 1 else result

    def run(self, shape, out, origin, inputs, named) -> list:
        """The outputs of one call: inputs by object (`inputs`) or by name (`named`);
        NumPy arrays, or on a GPU target with GPU arrays in and no `out=`, arrays on the
        device (the inputs' kind: PyTorch, CuPy, else `halo.DeviceArray`)."""
        env = self.lowered.env
        on_gpu = self.target.kind is TargetKind.CUDA
        if on_gpu:  # each GPU input's interface read once a call, here (PyTorch builds it
            # at each read): bind checks the DeviceArray it becomes
            named = _gpu_inputs_on_device(named, env)
            inputs = inputs and _gpu_inputs_on_device(inputs, env)
        arrays, scalars = bind(env, inputs, **named)
        if not on_gpu:
            arrays = {name: _on_target(a, f"input {name}", False) for name, a in arrays.items()}
        for name, a in arrays.items():  # before _addressable copies a view halo can't index
            if max(a.shape, default=0) > MAX_EXTENT:  # (the message: checked_scalar's)
                for i, extent in enumerate(a.shape):
                    checked_scalar(int32, extent, self._describe_scalar(f"{name}.extent.{i}"))
        arrays = {name: a if isinstance(a, DeviceArray) else
                  np.ascontiguousarray(a) if on_gpu else _addressable(a)
                  for name, a in arrays.items()}
        # GPU arrays in (all of them), no out=: the outputs stay on the device
        devices = [a for a in arrays.values() if isinstance(a, DeviceArray)]
        on_device = bool(devices) and out is None and len(devices) == len(arrays)
        given = None
        if on_gpu and out is not None:  # each GPU array's interface read once
            given = list(out) if isinstance(out, (list, tuple)) else [out]
            out = [_on_target(o, f"out= for {f}", True)
                   for o, f in zip(given, self.output_names, strict=False)] + \
                given[len(self.output_names):]
        outs = self._outputs(shape, out, on_device)
        # What the code writes: the outputs, or (GPU) contiguous stand-ins for NumPy ones
        # (a GPU target's outputs are DeviceArrays or NumPy arrays by now)
        written = [o if isinstance(o, DeviceArray) or o.flags.c_contiguous
                   else np.empty(o.shape, o.dtype) for o in outs] if on_gpu else \
            [_on_target(o, f"out= for {f}", False)
             for f, o in zip(self.output_names, outs, strict=True)]
        named_arrays = [*arrays.items(), *zip(self.output_names, written, strict=True)]
        if origin is None:  # the same layouts and scalars as a call before: checked then
            layout = (tuple((a.shape, a.strides) for _, a in named_arrays),
                      tuple(scalars.values()))
            scalar_values = self._checked_calls.get(
                layout, lambda: self._checked_scalars(named_arrays, scalars, origin))
        else:
            scalar_values = self._checked_scalars(named_arrays, scalars, origin)
        counts = np.zeros(len(self.lowered.counted), dtype=np.int64)
        if on_gpu:
            self._run_on_gpu(arrays, written, scalar_values)
            for o, w in zip(outs, written, strict=True):
                if o is not w and isinstance(o, np.ndarray):
                    o[...] = w
            if given is not None:
                return given
            return [as_kind_of(o, devices[0].owner) for o in outs] if on_device else outs
        buffers = [arrays[b] if b in arrays else counts if b == COUNTS_BUFFER
                   else outs[self.output_names.index(b)] for b in self.buffer_names]
        self.function(*buffers, *scalar_values)
        if self.target.count_stores:
            self.store_counts = dict(zip(self.lowered.counted, counts.tolist(), strict=True))
        return outs

    def _checked_scalars(self, named_arrays: list, scalars: dict, origin) -> list:
        """The scalar arguments of a call on `named_arrays` (name, array: inputs, then what
        the outputs are written to), each checked, after the region checks pass."""
        if self.target.kind is TargetKind.CUDA:
            for name, a in named_arrays:
                check_size(a, f"array {name}")
        call = f"{self.output_names[0]}.realize(...)"
        output = dict(named_arrays)[self.output_names[0]]
        origin = checked_origin(origin, output.ndim, call)
        checked_region(origin, output.shape, call)
        values: dict[str, object] = dict(scalars)
        for name, arr in named_arrays:
            for i in range(arr.ndim):
                values[f"{name}.extent.{i}"] = arr.shape[i]
                values[f"{name}.stride.{i}"] = arr.strides[i] // arr.itemsize
                values[f"{name}.min.{i}"] = origin[i] if name in self.output_names else 0
        for name, (t, description) in self._array_scalars.items():
            values[name] = checked_scalar(t, values[name], description)
        self._check_regions(values)
        return [values[s] for s in self.scalar_names]

    def _run_on_gpu(self, arrays: dict, written: list, scalar_values: list) -> None:
        """Call the GPU pipeline: NumPy arrays through device copies (DeviceCall)."""
        call = DeviceCall()
        try:
            buffers = [call.input(arrays[b]) if b in arrays else
                       call.output(written[self.output_names.index(b)])
                       for b in self.buffer_names]
            self.function(*buffers, *scalar_values)
            call.finish()
        finally:
            call.close()

    def _outputs(self, shape, out, on_device: bool = False) -> list:
        funcs = [self.lowered.env.funcs[nm] for nm in self.output_names]
        if out is not None:
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            if len(outs) != len(funcs):
                raise InputError(f"out= has {len(outs)} array(s) for {len(funcs)} output(s)")
            for f, t, arr in zip(funcs, self._output_types, outs, strict=True):
                _check_out(f.name, f.dimensions, t, arr, self.target.kind is TargetKind.CUDA)
            if len({a.shape for a in outs}) > 1:
                raise InputError("all outputs of a Pipeline must have the same shape")
            return outs
        if shape is None:
            raise InputError("give the output shape, e.g. f.realize((480, 640)), or out=array")
        make = DeviceArray.empty if on_device else np.empty
        return [make(checked_shape(shape, f.dimensions, f"{f.name}.realize(...)"), t.numpy)
                for f, t in zip(funcs, self._output_types, strict=True)]

    def _describe_scalar(self, name: str) -> str:
        """A scalar argument derived from an array, as the user knows it: `inp.extent.0`
        is the extent of input inp in dimension 0."""
        array, field, dim = name.rsplit(".", 2)
        kind = "output" if array in self.output_names else "input"
        role = {"extent": "extent", "stride": "stride (in elements)", "min": "origin"}[field]
        return f"the {role} of {kind} {array} in dimension {dim} (outermost is 0)"

    def _check_regions(self, values: dict[str, object]) -> None:
        failed = self._checks(values)
        if failed is not None:
            raise describe(*failed)


def _on_target(a: object, what: str, on_gpu: bool) -> np.ndarray | DeviceArray:
    """`a` as the target's code takes it: a GPU array as a DeviceArray (GPU targets only)."""
    if on_gpu:
        found = as_device_array(a, what)
        return a if found is None else found
    if is_device_array(a):
        raise InputError(f"{what} is a GPU array, but this pipeline was compiled for the "
                         "host; compile it with target='cuda', or pass a NumPy array")
    return a


def _gpu_inputs_on_device(values: dict, env: Environment) -> dict:
    """`values` (by input name or ImageParam) with each GPU array among the inputs as a
    DeviceArray."""
    out = {}
    for key, value in values.items():
        name = getattr(key, "name", key)
        out[key] = _on_target(value, f"input {name}", True) if name in env.inputs else value
    return out


def _check_out(name: str, dimensions: int, t: Type, arr: object, on_gpu: bool) -> None:
    """Refuse an `out=` array compiled code can't write Func `name` (of type `t`) into
    (on a GPU target, GPU arrays come as DeviceArrays)."""
    if on_gpu and isinstance(arr, DeviceArray):
        if arr.dtype != t.numpy or arr.ndim != dimensions or arr.readonly:
            raise InputError(f"out= for {name} must be a writable {dimensions}-D "
                             f"{t} array, got a GPU array of dtype {arr.dtype}, shape "
                             f"{arr.shape}{', read-only' if arr.readonly else ''}")
        return
    if not isinstance(arr, np.ndarray) or arr.dtype != t.numpy or \
            arr.ndim != dimensions:
        raise InputError(f"out= for {name} must be a {dimensions}-D "
                         f"{t} NumPy array, got {_describe(arr)}")
    if isinstance(arr, np.ma.MaskedArray):
        raise InputError(masked_array_refusal(f"out= for {name}"))
    if not arr.flags.writeable:
        raise InputError(f"out= for {name} is read-only")
    if _addressable(arr) is not arr:
        raise InputError(f"out= for {name} must be aligned and have consecutive "
                         "elements in its last dimension (a view like a[:, ::2] or a.T, "
                         "or an array made by np.frombuffer at an odd offset, isn't); pass "
                         "a new array (np.empty(shape, dtype)), or leave out out= and copy "
                         "the result into it")


def _addressable(a: np.ndarray) -> np.ndarray:
    """`a`, or an aligned C-contiguous copy when its last dimension isn't contiguous or its
    elements aren't aligned: compiled code assumes neighbouring last indices are
    neighbouring elements (dense vector access) and aligned scalar loads."""
    if a.flags.aligned and (a.ndim == 0 or a.shape[-1] <= 1 or a.strides[-1] == a.itemsize):
        return a
    return np.array(a, order="C")


def _describe(a: object) -> str:
    if isinstance(a, np.ndarray):
        return f"a {a.ndim}-D {a.dtype} array"
    return type(a).__name__
