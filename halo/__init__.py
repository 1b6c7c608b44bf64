"""halo: a Halide-style scheduling language embedded in Python.

Write what to compute with Funcs over Vars, optionally say how with a schedule, and run
it as native code. See README.md and docs/.
"""
from halo import boundary
from halo.autoschedule import apply_best, autoschedule
from halo.driver import Pipeline
from halo.errors import (
                         BoundsError,
                         DefinitionError,
                         HaloError,
                         InputError,
                         InternalError,
                         ScheduleError,
)
from halo.ir.types import (
                         Type,
                         bool_,
                         float16,
                         float32,
                         float64,
                         int8,
                         int16,
                         int32,
                         int64,
                         uint8,
                         uint16,
                         uint32,
                         uint64,
)
from halo.lang import (
                         Buffer,
                         Expr,
                         Func,
                         ImageParam,
                         Intrinsic,
                         NameScope,
                         Param,
                         RDom,
                         RVar,
                         Stage,
                         Var,
                         abs,
                         cast,
                         ceil,
                         clamp,
                         cos,
                         exp,
                         floor,
                         log,
                         max,
                         maximum,
                         min,
                         minimum,
                         pow,
                         product,
                         round,
                         schedule_source,
                         select,
                         sin,
                         sqrt,
                         sum,
                         tanh,
                         vars,
)
from halo.reference import reference
from halo.runtime.device_arrays import DeviceArray
from halo.target import Target
from halo.version import __version__

__all__ = [
    "BoundsError", "DefinitionError", "HaloError", "InputError", "InternalError",
    "ScheduleError", "Type", "bool_", "float16", "float32", "float64", "int8", "int16",
    "int32", "int64", "uint8", "uint16", "uint32", "uint64", "Buffer", "Expr", "Func",
    "ImageParam", "Param", "RDom", "RVar", "Stage", "Var", "abs", "boundary", "cast", "ceil",
    "clamp", "cos", "exp", "floor", "log", "max", "maximum", "min", "minimum", "pow",
    "product", "round", "select", "sin", "sqrt", "sum", "tanh", "vars", "Pipeline", "Target",
    "DeviceArray",
    "reference", "schedule_source", "Intrinsic", "NameScope", "__version__", "autoschedule",
    "apply_best",
]
