"""The calling convention every backend compiles a pipeline to: one parameter per buffer
(inputs, outputs, the store-count buffer) and per scalar (Params, and the mins, extents
and strides of buffers), in the order `arguments_of` gives."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.substitute import free_vars
from halo.ir.types import Type, int64
from halo.lower.count_stores import COUNTS_BUFFER
from halo.lower.pipeline import Lowered
from halo.target import Target

# The dimensions a buffer's min/extent/stride scalars may name (f.extent.0 .. f.extent.7).
MAX_DIMENSIONS = 8


@dataclass(frozen=True)
class Argument:
    """One parameter of a generated function: a flat buffer or a scalar, by name."""

    name: str
    kind: Literal["buffer", "scalar"]
    type: Type  # element type for buffers, value type for scalars

    def __post_init__(self) -> None:
        if self.kind not in ("buffer", "scalar"):
            raise InternalError(f"argument {self.name!r} has kind {self.kind!r}; "
                                "expected 'buffer' or 'scalar'")
        if self.type.lanes != 1:
            raise InternalError(f"argument {self.name!r} has vector type {self.type}; "
                                "arguments are buffers of scalars or scalars")


def arguments_of(lowered: Lowered, target: Target) -> list[Argument]:
    """The parameters of `lowered`'s compiled function: its buffers (inputs, then outputs,
    then the counts buffer of a `count_stores` target), then the scalars its code reads,
    sorted by name. A free name that is none of those is a lowering bug."""
    env = lowered.env
    outputs = [f.name for f in env.outputs]
    buffers = [*env.inputs, *outputs, *([COUNTS_BUFFER] if target.count_stores else [])]
    scalars = sorted(free_vars(lowered.stmt) - set(buffers))
    known = set(env.params) | {f"{b}.{field}.{i}" for b in buffers
                               for field in ("min", "extent", "stride")
                               for i in range(MAX_DIMENSIONS)}
    strays = [s for s in scalars if s not in known]
    if strays:
        raise InternalError(f"lowered code uses undefined names {strays}")

    def element_type(name: str) -> Type:
        if name == COUNTS_BUFFER:
            return int64
        return env.inputs[name].dtype if name in env.inputs else env.funcs[name].type

    return [*(Argument(b, "buffer", element_type(b)) for b in buffers),
            *(Argument(s, "scalar", env.params[s].type if s in env.params else n.Var(s).type)
              for s in scalars)]
