"""Names of user objects: the ones users give are kept exactly (and must be identifiers);
the ones halo makes up get a process-wide counter (`f0`, `sum3`, `inp_repeat_edge1`).
Two different objects reached by one pipeline may not share a name (see environment)."""
from __future__ import annotations

import itertools
import re
from collections import defaultdict

from halo.errors import DefinitionError

_counters: defaultdict[str, itertools.count] = defaultdict(itertools.count)
_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def unique_name(prefix: str) -> str:
    """`prefix` + a number never handed out for that prefix before in this process."""
    return f"{prefix}{next(_counters[prefix])}"


def claim_name(name: str | None, prefix: str) -> str:
    """`name`, checked, if given; else a fresh `prefix`N."""
    if name is None:
        return unique_name(prefix)
    if not isinstance(name, str) or not _VALID.match(name):
        raise DefinitionError(f"{name!r} is not a valid halo name: use letters, digits "
                              "and underscores, not starting with a digit")
    return name
