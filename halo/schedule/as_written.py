"""Loop verbs kept as the user wrote them, so a schedule prints back as it was typed.

A `tile(y, x, yo, xo, yi, xi, 8, 16)` records two `Split`s and a `Reorder` (what lowering
reads), and `vectorize(x, 8)` a split and a loop kind; `as_written` also appends the call
itself, as a `LoopCall` with its loops by name, to the stage's `StageSchedule.calls`.
`halo.schedule_source` prints those calls, and replaying them through the same verbs
rebuilds the same records. A verb that calls others (`tile` calls `split` and `reorder`,
`gpu_tile` calls `tile`) is recorded as one call, and a refused call leaves no trace.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TypeVar

from halo.errors import ScheduleError
from halo.schedule.records import LoopCall

V = TypeVar("V", bound=Callable)


def loop_name(v: object) -> str:
    """The loop name a schedule argument stands for (a Var, RVar or string, or a 1-D RDom
    for its only reduction variable)."""
    if isinstance(v, str):
        return v
    rvars = getattr(v, "rvars", None)  # an RDom
    if rvars is not None:
        if len(rvars) != 1:
            names = ", ".join(r.name for r in rvars)
            raise ScheduleError(f"RDom {v.name} has {len(rvars)} dimensions, so it names no "
                                f"single loop; name one of its reduction variables: {names}")
        return rvars[0].name
    name = getattr(v, "name", None)
    if isinstance(name, str):
        return name
    raise ScheduleError(f"expected a Var or RVar naming a loop, got {v!r}")


def as_written(verb: V) -> V:
    """Decorate a loop verb of a `Schedulable` so each successful outermost call is kept
    in the stage's `calls` (see the module docstring)."""
    signature = inspect.signature(verb)

    @functools.wraps(verb)
    def recorded(self, *args, **kwargs):
        calls = self._stage().calls
        before = len(calls)
        try:
            result = verb(self, *args, **kwargs)
        except BaseException:
            del calls[before:]
            raise
        del calls[before:]  # the verbs this one called are part of it
        calls.append(_loop_call(verb.__name__, signature.bind(self, *args, **kwargs)))
        return result

    return recorded  # type: ignore[return-value]


def _loop_call(method: str, bound: inspect.BoundArguments) -> LoopCall:
    """The call as a person writes it: loops by name, numbers as given, optional numbers
    positional when given, string options (`tail=`) by keyword when not the default."""
    args: list[object] = []
    kwargs: list[tuple[str, object]] = []
    parameters = list(bound.signature.parameters.values())[1:]  # after self
    for p in parameters:
        if p.name not in bound.arguments:
            continue
        value = bound.arguments[p.name]
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            args += [_plain(v) for v in value]
        elif isinstance(p.default, str):
            if value != p.default:
                kwargs.append((p.name, value))
        elif value is not None:
            args.append(_plain(value))
    return LoopCall(method, tuple(args), tuple(kwargs))


def _plain(v: object) -> object:
    return v if isinstance(v, int) else loop_name(v)
