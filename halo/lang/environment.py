"""Everything a pipeline reaches from its outputs, and how run-time values bind to it.

`Environment.of(outputs)` collects the Funcs (in realization order: producers before
consumers), the inputs and the Params. `bind(env, inputs)` checks the
values a user passes — missing inputs, wrong dtype or rank, masked arrays, scalars their
Param's type doesn't accept — and returns them by name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from halo.errors import DefinitionError, InputError
from halo.ir.values import checked_scalar
from halo.lang.func import Func
from halo.lang.inputs import Buffer, ImageParam, Param, _Input, masked_array_refusal
from halo.lang.rdom import RDom


@dataclass
class Environment:
    outputs: list[Func]
    funcs: dict[str, Func]          # realization order: producers before consumers
    inputs: dict[str, _Input]
    params: dict[str, Param]

    @staticmethod
    def of(outputs: list[Func]) -> Environment:
        funcs: dict[str, Func] = {}
        inputs: dict[str, _Input] = {}
        params: dict[str, Param] = {}
        visiting: list[Func] = []  # the chain being visited, for cycle messages

        def visit_deps(deps, owner: Func) -> None:
            for d in sorted(deps - {owner}, key=lambda d: getattr(d, "name", "")):
                if isinstance(d, Func):
                    visit(d)
                elif isinstance(d, _Input):
                    inputs[d.name] = d
                elif isinstance(d, Param):
                    params[d.name] = d
                elif isinstance(d, RDom):  # its bounds and predicate may use other objects
                    for lo, ext in d.bounds:
                        visit_deps(lo.deps | ext.deps, owner)
                    if d.predicate is not None:
                        visit_deps(d.predicate.deps - {d}, owner)

        def visit(f: Func) -> None:
            if funcs.get(f.name) is f:
                return
            _check_unique_names([*funcs.values(), *visiting, f])
            if f in visiting:
                chain = " -> ".join(g.name for g in [*visiting[visiting.index(f):], f])
                raise DefinitionError(f"Func {f.name} depends on itself through other Funcs "
                                      f"({chain}); only an update may read its own Func")
            visiting.append(f)
            for d in f.definitions:
                visit_deps(d.deps, f)
            for stage in f.schedule.stages:  # Params that only a specialization tests
                for spec in stage.specializations:
                    visit_deps(spec.condition.deps, f)
            visiting.pop()
            funcs[f.name] = f

        for out in outputs:
            if not isinstance(out, Func):
                raise DefinitionError(f"outputs must be Funcs, got {out!r}")
            visit(out)
        _check_unique_names([*funcs.values(), *inputs.values(), *params.values()])
        return Environment(list(outputs), funcs, inputs, params)

    def consumers(self, name: str) -> list[str]:
        """Funcs whose definitions call `name`."""
        return [f.name for f in self.funcs.values()
                if any(self.funcs.get(name) in d.deps for d in f.definitions)
                and f.name != name]


def _check_unique_names(objects: list) -> None:
    seen: dict[str, object] = {}  # (the same object listed twice is fine)
    for obj in objects:
        other = seen.setdefault(obj.name, obj)
        if other is not obj:
            raise DefinitionError(
                f"two different objects in this pipeline are both named '{obj.name}' "
                f"({other!r} and {obj!r}); give them distinct names")


def bind(env: Environment, inputs: dict | None, **named) -> tuple[dict[str, np.ndarray],
                                                                   dict[str, object]]:
    """Arrays by input name and scalars by Param name, checked against the pipeline.
    `inputs` maps ImageParam/Param objects (or their names) to values."""
    given: dict[str, object] = dict(named)
    by_name = set(named)
    for key, value in (inputs or {}).items():
        if isinstance(key, str):
            by_name.add(key)
        elif not isinstance(key, (_Input, Param)):
            raise InputError(f"inputs keys must be ImageParams, Params or names, got {key!r}")
        given[key if isinstance(key, str) else key.name] = value
    # Objects this pipeline doesn't read are fine (one dict can serve several pipelines);
    # a name that matches nothing is a typo.
    unknown = by_name - set(env.inputs) - set(env.params)
    if unknown:
        raise InputError(f"unknown input(s) {', '.join(sorted(unknown))}; this pipeline "
                         f"takes {', '.join(sorted([*env.inputs, *env.params])) or 'nothing'}")
    arrays: dict[str, np.ndarray] = {}
    for name, inp in env.inputs.items():
        if isinstance(inp, Buffer):
            value = given.get(name, inp.array)
        elif name in given:
            value = given[name]
        else:
            raise InputError(f"ImageParam {name} ({inp.dtype}, {inp.ndim}-D) is not bound; "
                             f"pass inputs={{{name}: array}}")
        arrays[name] = _check_array(inp, value)
    scalars: dict[str, object] = {}
    for name, p in env.params.items():
        if name in given:
            value = given[name]
        elif p.default is not None:
            value = p.default
        else:
            raise InputError(f"Param {name} ({p.type}) is not bound and has no default; "
                             f"pass inputs={{{name}: value}}")
        scalars[name] = checked_scalar(p.type, value, f"Param {name} ({p.type})")
    return arrays, scalars


def offers_cuda_dlpack(value: object) -> bool:
    """Whether `value` offers DLPack of memory on a CUDA device (kDLCUDA,
    kDLCUDAManaged)."""
    device = getattr(value, "__dlpack_device__", None)
    if device is None or not hasattr(value, "__dlpack__"):
        return False
    try:
        return int(device()[0]) in (2, 13)
    except Exception:  # noqa: BLE001 - an object that can't say where it lives isn't one
        return False


def _check_array(inp: ImageParam | Buffer, value: object) -> np.ndarray:
    # a GPU array (PyTorch, CuPy, PyCUDA); read once (PyTorch builds it at each read)
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        check_device_array(inp, np.dtype(interface["typestr"]), tuple(interface["shape"]))
        return value
    if offers_cuda_dlpack(value):  # a GPU array that offers only DLPack: its dtype and
        return value               # rank are checked when the runtime reads it
    if not isinstance(value, np.ndarray):
        raise InputError(f"input {inp.name} must be a NumPy array, got {type(value).__name__}")
    if isinstance(value, np.ma.MaskedArray):
        raise InputError(masked_array_refusal(f"input {inp.name}"))
    if value.dtype != inp.dtype.numpy:
        raise InputError(f"input {inp.name} has dtype {value.dtype} but the pipeline expects "
                         f"{inp.dtype}; convert with .astype(np.{inp.dtype.numpy})")
    if value.ndim != inp.ndim:
        raise InputError(f"input {inp.name} has {value.ndim} dimension(s), shape "
                         f"{value.shape}, but the pipeline expects {inp.ndim}")
    return value


def check_device_array(inp: ImageParam | Buffer, dtype: np.dtype,
                       shape: tuple[int, ...]) -> None:
    """Refuse a GPU array of the wrong dtype or rank for `inp` (the array is passed on
    unchanged: only a pipeline for target 'cuda' takes it)."""
    if dtype != inp.dtype.numpy:
        raise InputError(f"input {inp.name} is a GPU array of dtype {dtype} but the pipeline "
                         f"expects {inp.dtype}; convert it on the device first")
    if len(shape) != inp.ndim:
        raise InputError(f"input {inp.name} is a GPU array of {len(shape)} dimension(s), "
                         f"shape {shape}, but the pipeline expects {inp.ndim}")
