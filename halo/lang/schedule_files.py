"""A pipeline's schedule as halo source and as JSON, and a saved schedule applied to a
freshly defined algorithm: the pipeline is found from its output here
(`Environment.of`), and `halo.schedule.serialize` does the rest over its records."""
from __future__ import annotations

from collections.abc import Iterable

from halo.lang.environment import Environment
from halo.lang.expr import Expr
from halo.lang.func import Func
from halo.lang.intrinsic import Intrinsic
from halo.lang.reduction_origins import notes
from halo.schedule.conditions import condition_from_json
from halo.schedule.serialize import apply_schedules_json, schedules_source, schedules_to_json


def schedule_source(f: Func) -> str:
    """The schedule of every Func feeding `f` as halo Python code. It refers to Funcs,
    inputs, RDoms and Intrinsics by their names, declares the loop Vars it introduces, and
    names the Funcs that cache_read/cache_write make after themselves. A comment first
    says where each name halo made up came from (`# sum0: the halo.sum in norm's
    definition`): pass name= to the reduction to write the name yourself."""
    env = Environment.of([f])
    text = schedules_source({name: g.schedule for name, g in env.funcs.items()})
    return "".join(f"# {note}\n" for note in notes(text, env.funcs)) + text


def schedule_to_json(f: Func) -> str:
    """The records of every Func feeding `f`, as JSON."""
    env = Environment.of([f])
    return schedules_to_json({name: g.schedule for name, g in env.funcs.items()})


def apply_json(f: Func, text: str, intrinsics: Iterable[Intrinsic] = ()) -> None:
    """Apply a schedule saved by `schedule_to_json` to the (unscheduled) Funcs feeding
    `f`, matched by name; the Funcs that cache_read/cache_write made are made again.
    `intrinsics` are the Intrinsics its tensorize calls name."""
    env = Environment.of([f])

    def condition(data: list) -> Expr:
        return Expr(*condition_from_json(data, env.inputs, env.params))

    apply_schedules_json(text, env.funcs, env.inputs, condition,
                         {i.name: i for i in intrinsics})
