"""Names of user objects: the ones users give are kept exactly (and must be identifiers);
the ones halo makes up (`f0`, `sum3`, `inp_repeat_edge1`) are numbered per prefix by a
`NameScope`.

    with halo.NameScope():          # an algorithm built here gets f0, sum0, r0, ...
        out = build_algorithm()     # whatever was built before, so the names (and the
                                    # schedules that refer to them) repeat on a rebuild

Outside any `with` block, names come from one default scope for the whole process (so
a script that builds one algorithm needs no block). Two different objects reached by one
pipeline may not share a name (see environment), so objects made in two scopes (both
may hand out `f0`) belong in two pipelines.
"""
from __future__ import annotations

import itertools
import re
from collections import defaultdict
from contextvars import ContextVar, Token
from types import TracebackType

from halo.errors import DefinitionError

_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class NameScope:
    """Numbers for the names halo makes up, per prefix; the innermost `with` block's
    scope names the objects made in it."""

    def __init__(self) -> None:
        self._counters: defaultdict[str, itertools.count] = defaultdict(itertools.count)
        self._tokens: list[Token[NameScope | None]] = []

    def unique(self, prefix: str) -> str:
        """`prefix` + a number this scope never handed out for that prefix before."""
        return f"{prefix}{next(self._counters[prefix])}"

    def __enter__(self) -> NameScope:
        self._tokens.append(_current.set(self))
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        _current.reset(self._tokens.pop())


_current: ContextVar[NameScope | None] = ContextVar("halo_name_scope", default=None)
_outside_any_scope = NameScope()  # names made outside every `with NameScope()` block


def unique_name(prefix: str) -> str:
    """`prefix` + a number never handed out for that prefix before in the current scope."""
    return (_current.get() or _outside_any_scope).unique(prefix)


def claim_name(name: str | None, prefix: str) -> str:
    """`name`, checked, if given; else a fresh `prefix`N."""
    if name is None:
        return unique_name(prefix)
    if not isinstance(name, str) or not _VALID.match(name):
        raise DefinitionError(f"{name!r} is not a valid halo name: use letters, digits "
                              "and underscores, not starting with a digit")
    return name
