"""What `cache_read` and `cache_write` (in `lang/caching.py`) check and rewrite, over
plain definitions: the scopes a copy may live in, whether a definition reads an object,
and a definition with its reads of one object redirected to another."""
from __future__ import annotations

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.substitute import var_names
from halo.ir.visitor import rewrite, walk
from halo.program import Definition
from halo.schedule.records import MemoryScope

CACHE_SCOPES = tuple(s.value for s in MemoryScope if s is not MemoryScope.AUTO)


def check_scope(label: str, call: str, scope: object) -> None:
    """Refuse a scope that is not one of `CACHE_SCOPES`."""
    if scope not in CACHE_SCOPES:
        raise ScheduleError(f"{label}.{call}({scope!r}): the scope must be one of "
                            f"{', '.join(repr(s) for s in CACHE_SCOPES)}")


def reads_object(definition: Definition, source: object) -> bool:
    """Whether `definition` reads this very Func or input (names can repeat across
    algorithms)."""
    return source in definition.deps and _reads(definition, source.name)


def _reads(definition: Definition, name: str) -> bool:
    nodes = [definition.value, *definition.args]
    return any(isinstance(c, n.Call) and c.name == name and c.kind is not n.CallKind.MATH
               for e in nodes for c in walk(e))


def redirect(definition: Definition, source: object, target: object) -> Definition:
    """`definition` with its reads of `source` (in its value and left side) reading
    `target` instead."""
    def swap(e):
        if isinstance(e, n.Call) and e.name == source.name and e.kind is not n.CallKind.MATH:
            return n.Call(e.type, target.name, tuple(rewrite(a, swap) for a in e.args),
                          n.CallKind.FUNC)
        return None

    args = tuple(rewrite(a, swap) for a in definition.args)
    value = rewrite(definition.value, swap)
    deps = definition.deps | {target}
    extents = {f"{source.name}.extent.{i}" for i in range(getattr(source, "ndim", 0))}
    if not predicate_reads(definition, source) and \
            not extents & set().union(*(var_names(e) for e in (value, *args))):
        deps = deps - {source}  # (the predicate, or inp.shape, may still use it)
    return Definition(args, value, definition.rdom, deps, definition.pure)


def predicate_reads(definition: Definition, source: object) -> bool:
    """Whether the where() predicate of the definition's RDom reads `source`."""
    rdom = definition.rdom
    return rdom is not None and rdom.predicate is not None and source in rdom.predicate.deps
