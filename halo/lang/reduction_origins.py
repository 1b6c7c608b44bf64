"""Where the Func of an inline reduction came from, for the names halo made up for them.

`halo.sum(e)` without `name=` makes a Func named `sum0`, which the user never wrote; any
message or loop nest that shows such a name also says where it came from:

    sum0 (the halo.sum in norm's definition)

`callers` finds the stages that use a Func (also what decides where an inline
reduction is computed by default), `origins` describes each made-up name of a pipeline,
`explained` adds those descriptions to a text that mentions the names.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from halo.lang.func import Func
from halo.schedule.records import stage_label


def callers(f: Func, funcs: Mapping[str, Func]) -> list[tuple[Func, int]]:
    """The stages (Func, stage index) among `funcs` whose definitions use `f`."""
    return [(g, k) for g in funcs.values() if g is not f and g.defined
            for k, d in enumerate(g.definitions) if f in d.deps]


def origins(funcs: Mapping[str, Func]) -> dict[str, str]:
    """For each Func among `funcs` that an inline reduction made and the user didn't
    name, where it came from: "the halo.sum in norm's definition"."""
    return {name: _origin(f, funcs) for name, f in funcs.items() if _made_up(f)}


def explained(text: str, funcs: Mapping[str, Func]) -> str:
    """`text` saying where each made-up name it mentions came from: after the name
    where it stands alone ("used by sum0 (the halo.sum in norm's definition), norm"),
    else in a note at the end ("sum0.s1.r.x ... (sum0 is the halo.sum in ...)")."""
    for name, origin in origins(funcs).items():
        said = f"{name} ({origin})" in text or f"({name} is {origin})" in text
        if said or not re.search(_mention(name), text):
            continue
        text, done = re.subn(rf"{_mention(name)}(?![.(\[])", f"{name} ({origin})", text,
                             count=1)
        if not done:
            text = f"{text} ({name} is {origin})"
    return text


def notes(text: str, funcs: Mapping[str, Func]) -> list[str]:
    """One line per made-up name `text` mentions: "sum0: the halo.sum in norm's
    definition"."""
    return [f"{name}: {origin}" for name, origin in origins(funcs).items()
            if re.search(_mention(name), text)]


def _mention(name: str) -> str:
    """A regular expression for `name` as a whole name (not inside `a.sum0` or `sum01`)."""
    return rf"(?<![\w.]){re.escape(name)}(?!\w)"


def _made_up(f: Func) -> bool:
    made = f.schedule.inline_reduction
    return made is not None and not made.named


def _origin(f: Func, funcs: Mapping[str, Func]) -> str:
    verb = f"the halo.{f.schedule.inline_reduction.verb}"
    users = callers(f, funcs)
    if not users:
        return f"{verb} that made it"
    if len(users) > 1:
        return f"{verb} used by {', '.join(stage_label(g.name, k) for g, k in users)}"
    g, k = users[0]
    if _made_up(g):
        return f"{verb} inside {_origin(g, funcs)}"
    return f"{verb} in {stage_label(g.name, k)}'s definition"
