"""The algorithm language: Funcs, Vars, RDoms, inputs, expressions, boundary conditions,
the scheduling verbs that make Funcs (cache_read/cache_write, rfactor, specialize),
tensor intrinsics, and a pipeline's schedule as source and JSON."""
from halo.lang import boundary
from halo.lang.expr import (
                            Expr,
                            abs,
                            cast,
                            ceil,
                            clamp,
                            cos,
                            exp,
                            floor,
                            log,
                            max,
                            min,
                            pow,
                            round,
                            select,
                            sin,
                            sqrt,
                            tanh,
)
from halo.lang.func import Definition, Func, FuncRef, Stage
from halo.lang.inputs import Buffer, ImageParam, Param
from halo.lang.intrinsic import Intrinsic
from halo.lang.names import NameScope
from halo.lang.rdom import RDom
from halo.lang.reductions import maximum, minimum, product, sum
from halo.lang.schedule_files import apply_json, schedule_source, schedule_to_json
from halo.lang.var import RVar, Var, vars

__all__ = ["boundary", "Expr", "abs", "cast", "ceil", "clamp", "cos", "exp", "floor", "log",
           "max", "min", "pow", "round", "select", "sin", "sqrt", "tanh", "Definition",
           "Func", "FuncRef", "Stage", "Buffer", "ImageParam", "Param", "Intrinsic",
           "NameScope", "RDom", "maximum", "minimum", "product", "sum", "apply_json",
           "schedule_source", "schedule_to_json", "RVar", "Var", "vars"]
