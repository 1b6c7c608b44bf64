"""A schedule as a list of calls: `Call`, one schedule method call on a Func or one of
its stages, as plain data that prints as halo source and round-trips through JSON.

`serialize` turns a pipeline's schedule records into calls (its replay plan) and prints
them; the random schedule generators (`halo.random_programs`) draw calls; a tuner's
database stores them. A call names what it is called on (a `StageRef`: a Func or input
by name, the stage, and the condition of a specialization of that stage), the method,
and its arguments:

- numbers, strings, and tuples (or lists) of them. A string is a loop name, printed
  bare as the Var (or RVar, `r.x`) a user would write, except for the methods in
  `STRING_ARGUMENTS` (memory scopes) and `specialize` (its string is a condition);
- a `StageRef` for a Func-valued argument (`compute_at(g, x)`, `readers=[g]`), an
  `IntrinsicRef` for a `halo.Intrinsic`;
- a condition or a bound as halo source text, or as an expression (a `halo.Expr`,
  printed through its IR). Only text has a JSON form.

    >>> call = Call(StageRef("blur", 1), "split", ("x", "xo", "xi", 8), (("tail", "guard"),))
    >>> call.source()
    "blur.update(0).split(x, xo, xi, 8, tail='guard')"
    >>> Call.from_json(call.to_json()) == call
    True

`calls_source(calls)` prints a list of calls as a script: it first declares the loop Vars
the calls introduce (`xo, xi = halo.vars("xo xi")`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.schedule.conditions import condition_text
from halo.schedule.records import stage_label

# Methods whose string arguments are values (memory scopes), not loop names.
STRING_ARGUMENTS = ("store_in", "cache_read", "cache_write")


@dataclass(frozen=True)
class StageRef:
    """A Func (or input) by name: stage 0 is the Func itself, stage k its update k - 1.
    `condition` (halo source text, or a boolean expression) names the specialization of
    the stage under that condition."""
    func: str
    stage: int = 0
    condition: object = None

    def source(self) -> str:
        text = stage_label(self.func, self.stage)
        if self.condition is None:
            return text
        return f"{text}.specialize({_condition_source(self.condition)})"


@dataclass(frozen=True)
class IntrinsicRef:
    """A `halo.Intrinsic`, by the name it was declared with."""
    name: str


@dataclass(frozen=True)
class Call:
    """`target.method(*args, **kwargs)`. `result` names the Func the call returns
    (cache_read, cache_write, rfactor), which later calls refer to by that name."""
    target: StageRef
    method: str
    args: tuple = ()
    kwargs: tuple[tuple[str, object], ...] = ()
    result: str | None = None

    def source(self) -> str:
        """The call as one line of halo source."""
        args = [_value_source(a, self.method) for a in self.args]
        args += [f"{k}={v!r}" if isinstance(v, str) else f"{k}={_value_source(v, self.method)}"
                 for k, v in self.kwargs]
        text = f"{self.target.source()}.{self.method}({', '.join(args)})"
        return text if self.result is None else f"{self.result} = {text}"

    def to_json(self) -> dict:
        """The call as JSON-able data (lists, dicts, strings, numbers). Raises a
        `ScheduleError` for an argument given as an expression rather than text."""
        data: dict = {"target": _value_json(self.target, self.method), "method": self.method,
                      "args": [_value_json(a, self.method) for a in self.args]}
        if self.kwargs:
            data["kwargs"] = {k: _value_json(v, self.method) for k, v in self.kwargs}
        if self.result is not None:
            data["result"] = self.result
        return data

    @classmethod
    def from_json(cls, data: dict) -> Call:
        """The call `to_json` gave `data` for (sequences come back as tuples)."""
        return cls(_value_from_json(data["target"]), data["method"],
                   tuple(_value_from_json(a) for a in data["args"]),
                   tuple((k, _value_from_json(v)) for k, v in data.get("kwargs", {}).items()),
                   data.get("result"))


def loop_names(calls: Sequence[Call]) -> list[str]:
    """The loop names the calls pass (outside RDoms: no `r.x`), in order of first use:
    the Vars a script of the calls must declare."""
    names: list[str] = []
    for call in calls:
        if call.method in (*STRING_ARGUMENTS, "specialize"):
            continue
        for a in call.args:
            if isinstance(a, str) and "." not in a and a not in names:
                names.append(a)
    return names


def declare_loops(calls: Sequence[Call]) -> list[str]:
    """The line declaring `loop_names(calls)` as Vars (none when there are none)."""
    names = loop_names(calls)
    if not names:
        return []
    lhs = ", ".join(names) + ("," if len(names) == 1 else "")
    return [f'{lhs} = halo.vars("{" ".join(names)}")']


def calls_source(calls: Sequence[Call]) -> str:
    """The calls as halo source: the loop Vars they introduce, then one line per call."""
    return "\n".join(declare_loops(calls) + [c.source() for c in calls]) + "\n"


def _condition_source(condition: object) -> str:
    return condition if isinstance(condition, str) else condition_text(condition.node)


def _value_source(a: object, method: str) -> str:
    if isinstance(a, StageRef):
        return a.source()
    if isinstance(a, IntrinsicRef):
        return a.name
    if isinstance(a, (tuple, list)):
        return f"[{', '.join(_value_source(x, method) for x in a)}]"
    if method == "specialize":
        return _condition_source(a)
    if isinstance(a, str) and method not in STRING_ARGUMENTS:
        return a  # a loop name, as the Var (or RVar, `r.x`) a user would write
    if isinstance(a, n.Expr):
        return expr_to_str(a)
    if hasattr(a, "node"):
        return expr_to_str(a.node)
    return repr(a)


def _value_json(a: object, method: str) -> object:
    if isinstance(a, StageRef):
        if a.condition is not None and not isinstance(a.condition, str):
            raise ScheduleError(f"a {method} call on a specialization with an expression "
                                "condition has no JSON form; give the condition as text")
        return {"func": a.func, "stage": a.stage, "condition": a.condition}
    if isinstance(a, IntrinsicRef):
        return {"intrinsic": a.name}
    if isinstance(a, (tuple, list)):
        return [_value_json(x, method) for x in a]
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    raise ScheduleError(f"the argument {a!r} of a {method} call has no JSON form; give "
                        "expressions as halo source text")


def _value_from_json(data: object) -> object:
    if isinstance(data, list):
        return tuple(_value_from_json(x) for x in data)
    if isinstance(data, dict):
        if "intrinsic" in data:
            return IntrinsicRef(data["intrinsic"])
        return StageRef(data["func"], data["stage"], data["condition"])
    return data
