"""The algorithm language: Funcs, Vars, RDoms, inputs, expressions, boundary conditions."""
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
from halo.lang.rdom import RDom
from halo.lang.reductions import maximum, minimum, product, sum
from halo.lang.var import RVar, Var, vars

__all__ = ["boundary", "Expr", "abs", "cast", "ceil", "clamp", "cos", "exp", "floor", "log",
           "max", "min", "pow", "round", "select", "sin", "sqrt", "tanh", "Definition",
           "Func", "FuncRef", "Stage", "Buffer", "ImageParam", "Param", "RDom", "maximum",
           "minimum", "product", "sum", "RVar", "Var", "vars"]
