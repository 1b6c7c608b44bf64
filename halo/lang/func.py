"""Funcs: the stages of an algorithm, defined by a pure definition and update definitions.

    f[y, x] = e           pure definition (left side: distinct Vars)
    f[y, x] = f[y, x] + e update definition (also `+=`, `-=`, `*=`)
    h[idx(r)] += 1        scatter update over an RDom (left side may use RVars)

Definitions are recorded as IR, never executed. Loop transformations and placement
come from `halo.schedule` (of the pure stage; `f.update(i)` for updates); the verbs that
make Funcs come from `caching.py`, `rfactor.py` and `specialize.py` beside this module.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from halo.errors import DefinitionError
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.substitute import var_names
from halo.ir.types import Type, bool_
from halo.ir.visitor import walk
from halo.lang.caching import CacheWrite, note_reads
from halo.lang.driver_seam import pipeline
from halo.lang.expr import Expr, _binary, _weak_const, as_expr
from halo.lang.indexing import index_args
from halo.lang.names import claim_name
from halo.lang.rdom import RDom
from halo.lang.rfactor import rfactor
from halo.lang.specialize import Specializable
from halo.lang.var import RVar, Var
from halo.program import Definition, provided_names
from halo.schedule import Dim, FuncPlacement, FuncSchedule, Schedulable, StageSchedule
from halo.schedule.records import CacheKind, stage_label
from halo.schedule.update_stage import UpdateStage

if TYPE_CHECKING:
    from halo.lower.pipeline import Lowered
    from halo.runtime import Kernel
    from halo.target import Target


def _index(name: str, key: object, ndim: int | None) -> tuple[Expr, ...]:
    """Index Exprs of `f[key]`; `f[()]` indexes a 0-d Func."""
    if isinstance(key, tuple) and not key:
        if ndim not in (None, 0):
            raise DefinitionError(f"Func {name} has {ndim} dimension(s); f[()] is for 0-d Funcs")
        return ()
    return index_args(name, key, ndim)


class _Update:
    """What `f[args] += e` hands from `__iadd__` to `__setitem__`."""

    def __init__(self, ref: FuncRef, op: type, value: object):
        self.ref, self.op, self.value = ref, op, value


class FuncRef(Expr):
    """`f[args]`: a call of a Func, usable in expressions and as the target of `+=`."""

    __slots__ = ("func", "args")

    def __init__(self, func: Func, args: tuple[Expr, ...]):  # noqa: D107 - no Expr init
        self.func = func
        self.args = args

    @property
    def node(self) -> n.Expr:  # type: ignore[override]
        f = self.func
        if f._pure is None:
            raise DefinitionError(f"Func {f.name} is used before it has a definition: "
                                  f"{f.name}[{', '.join(expr_to_str(a.node) for a in self.args)}]")
        if len(self.args) != f.dimensions:
            raise DefinitionError(f"Func {f.name} has {f.dimensions} dimension(s) but was "
                                  f"called with {len(self.args)} index(es)")
        return n.Call(f.type, f.name, tuple(a.node for a in self.args), n.CallKind.FUNC)

    @property
    def deps(self) -> frozenset:  # type: ignore[override]
        return frozenset({self.func}).union(*(a.deps for a in self.args))

    def __iadd__(self, value: object) -> _Update: return _Update(self, n.Add, value)
    def __isub__(self, value: object) -> _Update: return _Update(self, n.Sub, value)
    def __imul__(self, value: object) -> _Update: return _Update(self, n.Mul, value)


class Stage(UpdateStage, Specializable):
    """An update definition of a Func, for scheduling: `f.update(i)`."""

    def __init__(self, func: Func, index: int):
        self.func = func
        self.index = index  # 1 for the first update

    def _stage(self) -> StageSchedule:
        stages = self.func.schedule.stages
        if self.index >= len(stages):  # cache_write moved the updates to another Func
            moved = [g.name for g in self.func.definitions[0].deps
                     if isinstance(g, Func) and g.schedule.cache is not None
                     and g.schedule.cache.kind is CacheKind.WRITE]
            where = f" (cache_write moved them to {moved[0]}; schedule " \
                f"{stage_label(moved[0], self.index)})" if moved else ""
            raise DefinitionError(f"{self._stage_label()}: {self.func.name} has "
                                  f"{len(stages) - 1} update definition(s) now{where}")
        return stages[self.index]

    def _stage_label(self) -> str:
        return stage_label(self.func.name, self.index)

    def __repr__(self) -> str:
        return f"Stage({self._stage_label()})"

    def rfactor(self, rvar: object, v: object, name: str | None = None) -> Func:
        """Split this associative update into an intermediate Func, which reduces over
        every reduction loop but `rvar` for each value of a new pure Var `v` (its first,
        outermost dimension, followed by this Func's dimensions), and a merge of the
        intermediate over `rvar`, which becomes this stage. Returns the intermediate
        (named `name`, default `<func>_intm`), to schedule like any Func.

            for r.x in range(H):             intm = f.update(0).rfactor(r.x, u)
              for r.y in range(W):      ->   for u, r.y:  intm[u] = intm[u] + g[u, r.y]
                f[()] = f[()] + g[r.x, r.y]  for r.x:     f[()] = f[()] + intm[r.x]

        `rvar` may be a loop made by splitting or fusing reduction loops. The update must
        be `f = f op e` (or `e op f`, `min/max(f, e)`, `f - e`) with op one of + * min
        max and e free of f; anything else is refused.
        """
        return rfactor(self, rvar, v, name)


class Func(Schedulable, FuncPlacement, CacheWrite, Specializable):
    """A stage of an algorithm: a function over integer coordinates."""

    def __init__(self, name: str | None = None):
        self.name = claim_name(name, "f")
        self._pure: Definition | None = None
        self._updates: list[Definition] = []
        self._args: tuple[Var, ...] = ()
        # The first other Func defined from this one: no definition of this one may follow
        # (that Func would read it too).
        self._used_by: str | None = None
        self.schedule = FuncSchedule()

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Func({self.name!r})"

    def _new_func(self, name: str) -> Func:
        return Func(name)

    # -------------------------------------------------------------------- inspection

    @property
    def args(self) -> tuple[Var, ...]:
        """The pure Vars of the definition, outermost first."""
        return self._args

    @property
    def defined(self) -> bool:
        return self._pure is not None

    @property
    def type(self) -> Type:
        if self._pure is None:
            raise DefinitionError(f"Func {self.name} has no definition yet")
        return self._pure.value.type

    dtype = type

    @property
    def dimensions(self) -> int:
        return len(self._args)

    @property
    def definitions(self) -> list[Definition]:
        """The pure definition followed by the updates."""
        if self._pure is None:
            raise DefinitionError(f"Func {self.name} is used but never defined")
        return [self._pure, *self._updates]

    def update(self, i: int = 0) -> Stage:
        if not 0 <= i < len(self._updates):
            raise DefinitionError(f"{self.name}.update({i}): {self.name} has "
                                  f"{len(self._updates)} update definition(s)")
        return Stage(self, i + 1)

    def _stage(self) -> StageSchedule:
        if not self.schedule.stages:
            raise DefinitionError(f"define {self.name} before scheduling it")
        return self.schedule.stages[0]

    def _stage_label(self) -> str:
        return self.name

    # ------------------------------------------------------------------ definitions

    def __getitem__(self, key: object) -> FuncRef:
        ndim = self.dimensions if self._pure is not None else None
        return FuncRef(self, _index(self.name, key, ndim))

    def __setitem__(self, key: object, value: object) -> None:
        args = _index(self.name, key, None)
        if self._used_by is not None and self._pure is not None:
            lhs = f"{self.name}[{', '.join(expr_to_str(a.node) for a in args)}]"
            raise DefinitionError(
                f"{lhs} = ...: {self.name} is already used by {self._used_by}, which would "
                f"read this definition too; give {self.name} all its definitions before "
                f"using it, or define a new Func ({self.name}2 = halo.Func(...))")
        if isinstance(value, _Update):
            if value.ref.func is not self:
                raise DefinitionError(f"{self.name}[...] += ...: the target must be "
                                      f"{self.name} itself")
            if self._pure is None:
                self._define_identity(args, value.op, as_expr(value.value).type)
            value = _binary_update(value)
        if self._pure is None:
            self._define_pure(args, value)
        else:
            self._define_update(args, value)
        for d in self.definitions[-1].deps:
            if isinstance(d, Func) and d is not self and d._used_by is None:
                d._used_by = self.name

    def _define_identity(self, args: tuple[Expr, ...], op: type, t: Type) -> None:
        """`f[...] += e` on an undefined f: f starts as 0 (1 for `*=`) everywhere, with
        the type of e."""
        pure_args = tuple(a if type(a) is Var else Var(f"{self.name}_d{i}")
                          for i, a in enumerate(args))
        self._define_pure(pure_args, Expr(n.const(1 if op is n.Mul else 0, t)))

    def _define_pure(self, args: tuple[Expr, ...], value: object) -> None:
        lhs = f"{self.name}[{', '.join(expr_to_str(a.node) for a in args)}]"
        if not all(type(a) is Var for a in args):
            raise DefinitionError(
                f"{lhs} = ...: the first definition of {self.name} must be pure, indexed "
                f"by distinct Vars (like {self.name}[y, x] = ...); to accumulate, define "
                f"{self.name} first or use +=")
        names = [a.name for a in args]
        if len(set(names)) != len(names):
            raise DefinitionError(f"{lhs} = ...: each Var may appear once on the left side")
        e = as_expr(value)
        if isinstance(e, FuncRef) and e.func is self:
            raise DefinitionError(f"{lhs} = {lhs}: {self.name} can't be defined in terms "
                                  "of itself before it has a pure definition")
        rdoms = [d for d in e.deps if isinstance(d, RDom)]
        if rdoms:
            raise DefinitionError(
                f"{lhs} = ...: a pure definition can't use the reduction variables of "
                f"{rdoms[0].name}; use an update definition ({self.name}[...] += ...) or an "
                "inline reduction (halo.sum(...))")
        free = var_names(e.node) - provided_names(e.deps) - set(names)
        if free:
            raise DefinitionError(
                f"{lhs} = ...: the right side uses Var(s) {', '.join(sorted(free))} that are "
                "not on the left side")
        self._args = tuple(args)
        self._pure = Definition(tuple(a.node for a in args), e.node, None, e.deps)
        note_reads(self, self._pure)
        self.schedule.stages = [StageSchedule([Dim(nm) for nm in names])]

    def _define_update(self, args: tuple[Expr, ...], value: object) -> None:
        lhs = f"{self.name}[{', '.join(expr_to_str(a.node) for a in args)}]"
        if len(args) != self.dimensions:
            raise DefinitionError(f"{lhs} = ...: {self.name} has {self.dimensions} "
                                  f"dimension(s) but the left side has {len(args)}")
        e = as_expr(value) if not isinstance(value, (int, float, bool)) else \
            _weak_const(value, self.type)
        if e.type != self.type:
            raise DefinitionError(
                f"{lhs} = ...: the update has type {e.type} but {self.name} has type "
                f"{self.type} (from its pure definition); cast with .astype({self.type})")
        deps = e.deps.union(*(a.deps for a in args))
        rdoms = sorted({d for d in deps if isinstance(d, RDom)}, key=lambda r: r.name)
        if len(rdoms) > 1:
            raise DefinitionError(f"{lhs} = ...: an update may use one RDom, but this one "
                                  f"uses {', '.join(r.name for r in rdoms)}")
        rdom = rdoms[0] if rdoms else None
        if rdom is not None and rdom.predicate is not None:
            deps = deps | rdom.predicate.deps
        provided = provided_names(deps)
        pure_names = [v.name for v in self._args]
        stage_pure: list[str] = []
        inside: set[str] = set()
        for i, a in enumerate(args):
            if isinstance(a.node, n.Var) and a.node.name == pure_names[i]:
                stage_pure.append(a.node.name)
            elif isinstance(a.node, n.Var) and a.node.name not in provided | set(pure_names):
                raise DefinitionError(
                    f"{lhs} = ...: pure Var {a.node.name} must index the same dimension "
                    f"as in the pure definition ({self.name}[{', '.join(pure_names)}])")
            else:
                inside |= var_names(a.node) - provided
        if inside - set(stage_pure):
            raise DefinitionError(
                f"{lhs} = ...: pure Var(s) {', '.join(sorted(inside - set(stage_pure)))} are "
                "used on the left side without indexing their own dimension; a pure Var of an "
                "update must appear alone in its dimension (so its points are independent), "
                f"and may index other dimensions too ({self.name}[x, x] = ...)")
        predicate = rdom.predicate.node if rdom is not None and rdom.predicate is not None \
            else n.const(True, bool_)
        free = (var_names(e.node) | var_names(predicate)) - provided - set(stage_pure)
        if free:
            raise DefinitionError(f"{lhs} = ...: the right side uses Var(s) "
                                  f"{', '.join(sorted(free))} that are not on the left side")
        self._check_self_calls(lhs, e.node, stage_pure)
        definition = Definition(tuple(a.node for a in args), e.node, rdom, deps,
                                tuple(stage_pure))
        self._updates.append(definition)
        note_reads(self, definition)
        dims = [Dim(nm) for nm in pure_names if nm in stage_pure]
        dims += [Dim(r.name, pure=False) for r in (rdom.rvars if rdom else ())]
        self.schedule.stages.append(StageSchedule(dims))

    def _check_self_calls(self, lhs: str, value: n.Expr, stage_pure: list[str]) -> None:
        """A pure Var of an update must index its own dimension in every read of the Func
        itself, so the points of the update are independent of each other."""
        pure_names = [v.name for v in self._args]
        for node in walk(value):
            if isinstance(node, n.Call) and node.name == self.name:
                for i, a in enumerate(node.args):
                    name = pure_names[i]
                    if name in stage_pure and not (isinstance(a, n.Var) and a.name == name):
                        raise DefinitionError(
                            f"{lhs} = ...: the update reads {self.name} at "
                            f"{expr_to_str(node)}, but pure Var {name} must appear unchanged "
                            f"in dimension {i}; use an RDom to express a recurrence")

    # ------------------------------------------------------------ running (delegates)

    def realize(self, shape: object = None, inputs: dict | None = None,
                target: str | Target = "host", out: np.ndarray | None = None,
                origin: object = None) -> np.ndarray:
        """Compile this Func as a one-output pipeline and run it over `shape` (or into
        `out`), with `inputs` bound; returns the result."""
        return pipeline([self]).realize(shape, inputs=inputs, target=target, out=out,
                                        origin=origin)

    def compile(self, target: str | Target = "host") -> Kernel:
        """This Func as a compiled one-output pipeline."""
        return pipeline([self]).compile(target)

    def lower(self, target: str | Target = "host") -> Lowered:
        """This Func's one-output pipeline, lowered to a loop nest."""
        return pipeline([self]).lower(target)

    def print_loop_nest(self, target: str | Target = "host") -> None:
        """Print the loop nest of this Func's one-output pipeline."""
        pipeline([self]).print_loop_nest(target)


def _binary_update(u: _Update) -> Expr:
    ref = u.ref
    f = ref.func
    value = u.value
    rhs = _weak_const(value, f.type) if isinstance(value, (int, float, bool)) else as_expr(value)
    if rhs.type != f.type:
        raise DefinitionError(
            f"{f.name}[...] {'+-*'[[n.Add, n.Sub, n.Mul].index(u.op)]}= ...: the value has "
            f"type {rhs.type} but {f.name} has type {f.type}; cast with .astype({f.type})")
    return _binary(u.op, ref, rhs)


__all__ = ["Func", "FuncRef", "Stage", "Definition", "Var", "RVar"]
