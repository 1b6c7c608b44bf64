"""`cache_read` and `cache_write`: copy stages built from wrapper Funcs (TVM's meaning).

    B_global = B.cache_read("global", readers=[C])
        B_global[k, j] = B[k, j]; C reads B_global where it read B. B may be a Func or an
        input; readers that are not named keep reading B.
    C_local = C.cache_write("local")
        C_local takes every definition of C (its updates read C_local); C becomes the
        copy-out C[i, j] = C_local[i, j].

Both return the new Func, computed at root by default and stored in the scope given;
schedule it like any Func (compute_at, split, update(i), ...). Its pure Vars
(`f.args`) are fresh Vars with the names of the source's dimensions (`{name}_d{i}` for
an input). The new Func records how it was made (`CacheOrigin`) so that a schedule
replays from JSON or source.
"""
from __future__ import annotations

import itertools
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.substitute import var_names
from halo.ir.visitor import rewrite, walk
from halo.schedule.records import (
    ROOT,
    CacheKind,
    CacheOrigin,
    Dim,
    MemoryScope,
    StageSchedule,
    stage_label,
)

if TYPE_CHECKING:
    from halo.lang.func import Func

CACHE_SCOPES = tuple(s.value for s in MemoryScope if s is not MemoryScope.AUTO)

_live_funcs: weakref.WeakSet = weakref.WeakSet()  # for `readers=None`: who reads a Func
_creation = itertools.count()  # orders cache stages, so a replay makes them in order


def register_func(f) -> None:
    """Remember a Func, so `cache_read` can find every reader of its source."""
    _live_funcs.add(f)


def _check_scope(label: str, call: str, scope: object) -> None:
    if scope not in CACHE_SCOPES:
        raise ScheduleError(f"{label}.{call}({scope!r}): the scope must be one of "
                            f"{', '.join(repr(s) for s in CACHE_SCOPES)}")


def _cache_name(source, scope: str) -> str:
    """`{source}_{scope}`, numbered from the second cache of one source in one scope, so
    the names repeat when the same schedule is applied to a fresh algorithm."""
    counts = source.__dict__.setdefault("_cache_counts", {})
    k = counts.get(scope, 0)
    counts[scope] = k + 1
    return f"{source.name}_{scope}" if k == 0 else f"{source.name}_{scope}{k}"


def _reads_object(definition, source) -> bool:
    """Whether `definition` reads this very Func or input (names can repeat across
    algorithms)."""
    return source in definition.deps and _reads(definition, source.name)


def _reads(definition, name: str) -> bool:
    nodes = [definition.value, *definition.args]
    return any(isinstance(c, n.Call) and c.name == name and c.kind is not n.CallKind.MATH
               for e in nodes for c in walk(e))


def _redirect(definition, source, target):
    """`definition` with its reads of `source` (in its value and left side) reading
    `target` instead."""
    from halo.lang.func import Definition

    def swap(e):
        if isinstance(e, n.Call) and e.name == source.name and e.kind is not n.CallKind.MATH:
            return n.Call(e.type, target.name, tuple(rewrite(a, swap) for a in e.args),
                          n.CallKind.FUNC)
        return None

    args = tuple(rewrite(a, swap) for a in definition.args)
    value = rewrite(definition.value, swap)
    deps = definition.deps | {target}
    extents = {f"{source.name}.extent.{i}" for i in range(getattr(source, "ndim", 0))}
    if not _predicate_reads(definition, source) and \
            not extents & set().union(*(var_names(e) for e in (value, *args))):
        deps = deps - {source}  # (the predicate, or inp.shape, may still use it)
    return Definition(args, value, definition.rdom, deps)


def _predicate_reads(definition, source) -> bool:
    rdom = definition.rdom
    return rdom is not None and rdom.predicate is not None and source in rdom.predicate.deps


def _readers_of(source) -> list:
    return sorted((f for f in list(_live_funcs) if f is not source and f.defined
                   and any(_reads_object(d, source) for d in f.definitions)),
                  key=lambda f: f.name)


def _wrapper(name: str, dims: list[str], source, scope: str, origin: CacheOrigin):
    """A new Func `name[dims] = source[dims]`, computed at root and stored in `scope`."""
    from halo.lang.func import Func
    from halo.lang.var import Var
    w = Func(name)
    args = tuple(Var(d) for d in dims)
    w[args] = source[args] if args else source[()]
    w.schedule.compute_level = ROOT
    w.schedule.memory_scope = origin.scope
    w.schedule.cache = origin
    return w


class CacheRead:
    """Mixin for Funcs and inputs: `cache_read`."""

    name: str

    def cache_read(self, scope: str, readers: Sequence[Func] | None = None) -> Func:
        """A copy stage of this Func (or input) in `scope`, read by `readers` (a list of
        Funcs; default: every Func defined so far that reads it, other than itself);
        returns the new Func. Funcs not among the readers keep reading the original.

            for k: for j: C[..] += A[..] * B[k, j]     Bp = B.cache_read("global", [C])
                                                  ->   Bp.compute_at(C, jo)
            for jo:                                    for jo:
              for i: for k: for ji:                      for k: for ji: Bp[k, ji] = B[k, ji]
                C[i, j] += A[i, k] * B[k, j]             for i: for k: for ji:
                                                           C[i, j] += A[i, k] * Bp[k, j]
        """
        label = self.name
        _check_scope(label, "cache_read", scope)
        shown = f"[{', '.join(getattr(r, 'name', repr(r)) for r in readers)}]" \
            if isinstance(readers, (list, tuple)) else repr(readers)
        call = f"{label}.cache_read({scope!r}, readers={shown})"
        if not getattr(self, "defined", True):
            raise ScheduleError(f"{call}: define {label} before caching it")
        if readers is None:
            chosen = _readers_of(self)
            if not chosen:
                raise ScheduleError(f"{call}: no Func reads {label} yet, so there is nothing "
                                    "to read the copy; define its consumers first, or name "
                                    "them with readers=[...]")
        else:
            chosen = _checked_readers(self, call, readers)
        origin = CacheOrigin(CacheKind.READ, label, MemoryScope(scope),
                             None if readers is None else tuple(r.name for r in chosen),
                             next(_creation))
        name = _cache_name(self, scope)
        w = _wrapper(name, self._cache_dims(name), self, scope, origin)
        for r in chosen:
            r._pure = _redirect(r._pure, self, w)
            r._updates = [_redirect(u, self, w) for u in r._updates]
        return w

    def _cache_dims(self, name: str) -> list[str]:
        """Names for the pure Vars of a copy named `name`, outermost first."""
        args = getattr(self, "args", None)
        if args is not None:
            return [v.name for v in args]
        return [f"{name}_d{i}" for i in range(self.ndim)]


def _checked_readers(source, call: str, readers) -> list:
    from halo.lang.func import Func
    if isinstance(readers, Func) or not isinstance(readers, (list, tuple)) or not readers:
        raise ScheduleError(f"{call}: readers must be a non-empty list of Funcs that read "
                            f"{source.name} (or None for all of them)")
    readers_now = [r.name for r in _readers_of(source)]
    chosen = []
    for r in readers:
        if not isinstance(r, Func):
            raise ScheduleError(f"{call}: readers must be Funcs, not {r!r}")
        if r is source:
            raise ScheduleError(f"{call}: {source.name} can't read its own cache; its "
                                "updates keep reading it. Use cache_write to compute it "
                                "elsewhere")
        if not (r.defined and any(_reads_object(d, source) for d in r.definitions)):
            raise ScheduleError(
                f"{call}: {r.name} does not read {source.name}; the Funcs that read it are: "
                f"{', '.join(readers_now) or '(none yet)'}")
        if r not in chosen:
            chosen.append(r)
    return chosen


class CacheWrite:
    """Mixin for Func: `cache_write`."""

    def cache_write(self, scope: str) -> Func:
        """A stage that computes this Func into `scope`; this Func becomes the copy-out.
        Every definition (pure and updates) moves to the new Func, which is returned.

            for i: for j: C[i, j] = 0                  CL = C.cache_write("local")
            for i: for j: for k:                  ->   CL.compute_at(C, jo) ...
              C[i, j] += A[i, k] * B[k, j]             for jo:
                                                         CL[..] = 0; CL[..] += A * B
                                                         for ji: C[i, j] = CL[i, j]
        """
        f = self
        call = f"{f.name}.cache_write({scope!r})"
        _check_scope(f.name, "cache_write", scope)
        if not f.defined:
            raise ScheduleError(f"{call}: define {f.name} before caching it")
        for k, stage in enumerate(f.schedule.stages):
            if stage.transforms or stage.specializations or stage.tensorize or \
                    any(d.kind.value != "serial" for d in stage.dims):
                where = stage_label(f.name, k)
                raise ScheduleError(
                    f"{call}: {where} already has a loop schedule, which would not carry "
                    f"over to the new Func; call cache_write first, then schedule the Func "
                    "it returns")
        if any(_predicate_reads(d, f) for d in f._updates):
            raise ScheduleError(f"{call}: an update of {f.name} reads {f.name} in its RDom's "
                                "where() predicate, which can't be moved to a new Func")
        dims = [v.name for v in f.args]
        origin = CacheOrigin(CacheKind.WRITE, f.name, MemoryScope(scope), None,
                             next(_creation))
        w = _wrapper(_cache_name(f, scope), dims, f, scope, origin)
        # The wrapper was defined as a copy of f; now it takes f's definitions instead.
        w._pure = f._pure
        w._updates = [_redirect(u, f, w) for u in f._updates]
        w.schedule.stages = [StageSchedule([Dim(d.name, d.kind, d.pure) for d in s.dims])
                             for s in f.schedule.stages]
        copy_out = w[tuple(f.args)] if f.args else w[()]
        f._pure, f._updates = None, []
        f[tuple(f.args) if f.args else ()] = copy_out
        return w
