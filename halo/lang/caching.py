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
from halo.lang.var import Var
from halo.program import Definition
from halo.schedule.caching import check_scope, predicate_reads, reads_object, redirect
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

_creation = itertools.count()  # orders cache stages, so a replay makes them in order


def note_reads(func: Func, definition: Definition) -> None:
    """Remember, on each Func and input that `definition` of `func` refers to, that
    `func` may read it, so `cache_read(readers=None)` finds its readers from the source
    itself (and never from Funcs of other algorithms)."""
    for d in definition.deps:
        if isinstance(d, CacheRead) and d is not func:
            d.__dict__.setdefault("_maybe_readers", weakref.WeakSet()).add(func)


def _cache_name(source: CacheRead, scope: str) -> str:
    """`{source}_{scope}`, numbered from the second cache of one source in one scope, so
    the names repeat when the same schedule is applied to a fresh algorithm."""
    counts = source.__dict__.setdefault("_cache_counts", {})
    k = counts.get(scope, 0)
    counts[scope] = k + 1
    return f"{source.name}_{scope}" if k == 0 else f"{source.name}_{scope}{k}"


def _readers_of(source: CacheRead) -> list[Func]:
    maybe = source.__dict__.get("_maybe_readers", ())
    return sorted((f for f in list(maybe) if f is not source and f.defined
                   and any(reads_object(d, source) for d in f.definitions)),
                  key=lambda f: f.name)


def _wrapper(w: Func, dims: list[str], source: CacheRead, scope: str,
             origin: CacheOrigin) -> Func:
    """`w` (a new Func) defined as `w[dims] = source[dims]`, computed at root and stored
    in `scope`."""
    args = tuple(Var(d) for d in dims)
    w[args] = source[args] if args else source[()]
    w.schedule.compute_level = ROOT
    w.schedule.memory_scope = MemoryScope(scope)
    w.schedule.cache = origin
    return w


class CacheRead:
    """Mixin for Funcs and inputs: `cache_read`. Subclasses provide `_new_func(name)`,
    a new, undefined Func."""

    name: str

    def _new_func(self, name: str) -> Func:
        raise NotImplementedError

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
        check_scope(label, "cache_read", scope)
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
        w = _wrapper(self._new_func(name), self._cache_dims(name), self, scope, origin)
        for r in chosen:
            r._pure = redirect(r._pure, self, w)
            r._updates = [redirect(u, self, w) for u in r._updates]
            for d in r.definitions:
                note_reads(r, d)
        return w

    def _cache_dims(self, name: str) -> list[str]:
        """Names for the pure Vars of a copy named `name`, outermost first."""
        args = getattr(self, "args", None)
        if args is not None:
            return [v.name for v in args]
        return [f"{name}_d{i}" for i in range(self.ndim)]


def _checked_readers(source: CacheRead, call: str, readers: object) -> list[Func]:
    # (a Func is what can be cache_written: inputs can only be cache_read)
    if isinstance(readers, CacheWrite) or not isinstance(readers, (list, tuple)) or \
            not readers:
        raise ScheduleError(f"{call}: readers must be a non-empty list of Funcs that read "
                            f"{source.name} (or None for all of them)")
    readers_now = [r.name for r in _readers_of(source)]
    chosen: list[Func] = []
    for r in readers:
        if not isinstance(r, CacheWrite):
            raise ScheduleError(f"{call}: readers must be Funcs, not {r!r}")
        if r is source:
            raise ScheduleError(f"{call}: {source.name} can't read its own cache; its "
                                "updates keep reading it. Use cache_write to compute it "
                                "elsewhere")
        if not (r.defined and any(reads_object(d, source) for d in r.definitions)):
            raise ScheduleError(
                f"{call}: {r.name} does not read {source.name}; the Funcs that read it are: "
                f"{', '.join(readers_now) or '(none yet)'}")
        if r not in chosen:
            chosen.append(r)
    return chosen


class CacheWrite(CacheRead):
    """Mixin for Func: `cache_write` (and `cache_read`)."""

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
        check_scope(f.name, "cache_write", scope)
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
        if any(predicate_reads(d, f) for d in f._updates):
            raise ScheduleError(f"{call}: an update of {f.name} reads {f.name} in its RDom's "
                                "where() predicate, which can't be moved to a new Func")
        dims = [v.name for v in f.args]
        origin = CacheOrigin(CacheKind.WRITE, f.name, MemoryScope(scope), None,
                             next(_creation))
        w = _wrapper(f._new_func(_cache_name(f, scope)), dims, f, scope, origin)
        # The wrapper was defined as a copy of f; now it takes f's definitions instead.
        w._pure = f._pure
        w._updates = [redirect(u, f, w) for u in f._updates]
        for d in w.definitions:
            note_reads(w, d)
        w.schedule.stages = [StageSchedule([Dim(d.name, d.kind, d.pure) for d in s.dims])
                             for s in f.schedule.stages]
        copy_out = w[tuple(f.args)] if f.args else w[()]
        f._pure, f._updates = None, []
        f[tuple(f.args) if f.args else ()] = copy_out
        return w
