"""Region checks as Python: the scalar expressions a Kernel evaluates before each run.

`compile_checks(checks)` turns the `RegionCheck`s of a lowered pipeline (integer
expressions over output regions, input extents and Params, each under the condition of
the specialization branches it belongs to, if any) into one Python function,
compiled once per Kernel, that returns the first failing check with its numbers, or None.
The expressions become Python as `analysis/python_source.py` says.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from halo.analysis.python_source import HELPERS, python_source
from halo.ir import nodes as n


def compile_checks(checks: Sequence) -> Callable[[dict[str, int]], tuple | None]:
    """A function of the argument values (by name) that returns (check, lo, hi, min,
    extent) for the first check that fails, or None when every access is in range."""
    lines = ["def run(v):"]
    nodes: list[n.Expr] = []
    for i, c in enumerate(checks):
        lo, hi, lo_ok, extent = (python_source(e, {}, nodes)
                                 for e in (c.lo, c.hi, c.min, c.extent))
        pad = "    "
        if c.when is not None:  # the check of one specialization's branch
            lines.append(f"    if {python_source(c.when, {}, nodes)}:")
            pad = "        "
        lines += [f"{pad}lo, hi, lo_ok, extent = {lo}, {hi}, {lo_ok}, {extent}",
                  f"{pad}if lo <= hi and (lo < lo_ok or hi > lo_ok + extent - 1):",
                  f"{pad}    return checks[{i}], lo, hi, lo_ok, extent"]
    lines.append("    return None")
    namespace = {**HELPERS, "nodes": nodes, "checks": list(checks)}
    exec(compile("\n".join(lines), "<halo region checks>", "exec"), namespace)  # noqa: S102
    return namespace["run"]
