"""An algorithm's identity where its names don't matter: what tuning records are keyed by.

`canonical(outputs)` walks the Funcs from the outputs, in the order their definitions
call each other, and names every Func, input, Param and RDom by that order (`f0`, `f1`,
..., `i0`, `p0`, `r0`): two definitions of the same algorithm get the same `digest`
whatever their Funcs are called (`blur_x` or `f12`, `inp_repeat_edge0` or
`inp_repeat_edge7`). The digest covers every definition (its IR, with those names
replaced), the inputs' and Params' types and the outputs. The names of pure Vars stay:
a schedule names its loops after them.

`renamed_schedule` moves a schedule saved as JSON from one copy of an algorithm to
another through the two copies' canonical names, with the Funcs `cache_read`,
`cache_write` and `rfactor` made (named after their source) renamed alike.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from halo.lang.environment import Environment
from halo.lang.func import Func

_NAME = re.compile(r"name='([^']*)'")


@dataclass(frozen=True)
class CanonicalAlgorithm:
    """`digest`: the algorithm's hash; `names`: each object's name -> its canonical name."""
    digest: str
    names: dict[str, str]

    def box_key(self, boxes: dict[str, object]) -> dict[str, object]:
        """`boxes` (by object name) by canonical name, in canonical order."""
        return dict(sorted((self.names.get(k, k), v) for k, v in boxes.items()))


def canonical(outputs: Sequence[Func]) -> CanonicalAlgorithm:
    """The canonical names and digest of the algorithm feeding `outputs`."""
    env = Environment.of(list(outputs))
    rdoms = {d.rdom.name: d.rdom for f in env.funcs.values() for d in f.definitions
             if d.rdom is not None}
    kinds = [("f", env.funcs), ("i", env.inputs), ("p", env.params), ("r", rdoms)]
    names: dict[str, str] = {}
    counts = {prefix: 0 for prefix, _ in kinds}

    def see(name: str) -> bool:
        """Name `name` canonically if it is an object seen for the first time."""
        if name in names:
            return False
        for prefix, objects in kinds:
            if name in objects:
                names[name] = f"{prefix}{counts[prefix]}"
                counts[prefix] += 1
                return True
        return False

    texts: dict[str, str] = {}
    queue = [f.name for f in outputs]
    for name in queue:
        see(name)
    while queue:
        f = env.funcs[queue.pop(0)]
        text = "\n".join(_definition_text(d) for d in f.definitions)
        for token in _NAME.findall(text):
            head = token.split(".")[0]
            if see(head) and head in env.funcs:
                queue.append(head)
        texts[f.name] = text
    lines = [f"outputs {[names[f.name] for f in outputs]}"]
    for name in sorted(texts, key=lambda k: int(names[k][1:])):
        f = env.funcs[name]
        args = ", ".join(_renamed_name(v.name, names, _by_length(names)) for v in f.args)
        lines.append(f"{names[name]}({args}):\n"
                     f"{_renamed_text(texts[name], names)}")
    for name, inp in sorted(env.inputs.items(), key=lambda kv: names.get(kv[0], kv[0])):
        shape = getattr(getattr(inp, "array", None), "shape", None)
        lines.append(f"{names.get(name, name)}: {type(inp).__name__} {inp.dtype} {inp.ndim} "
                     f"{shape}")
    for name, p in sorted(env.params.items(), key=lambda kv: names.get(kv[0], kv[0])):
        lines.append(f"{names.get(name, name)}: Param {p.type}")
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:24]
    return CanonicalAlgorithm(digest, names)


def _definition_text(d) -> str:
    rdom = d.rdom
    text = f"{d.args!r} = {d.value!r}"
    if rdom is not None:
        bounds = [(repr(lo.node), repr(e.node)) for lo, e in rdom.bounds]
        predicate = None if rdom.predicate is None else repr(rdom.predicate.node)
        text += f" over name='{rdom.name}' {[r.name for r in rdom.rvars]} {bounds} {predicate}"
    return text


def _renamed_text(text: str, names: dict[str, str]) -> str:
    prefixes = _by_length(names)
    return _NAME.sub(lambda m: f"name='{_renamed_name(m.group(1), names, prefixes)}'", text)


def _by_length(names: dict[str, str]) -> list[str]:
    return sorted(names, key=len, reverse=True)


def _renamed_name(name: str, mapping: dict[str, str], prefixes: list[str]) -> str:
    """`name` renamed: an object's name; a field of one (`inp.extent.0`, `r0.x`); or a
    name made from one (`inp_repeat_edge0_d0`, `B_global`, `C_local`), whose prefix is
    renamed."""
    if name in mapping:
        return mapping[name]
    head, dot, rest = name.partition(".")
    if dot and head in mapping:
        return mapping[head] + dot + rest
    for old in prefixes:
        if name.startswith(old + "_"):
            return mapping[old] + name[len(old):]
    return name


# Schedule JSON entries that hold no names.
_NOT_NAMES = frozenset({"kind", "memory_scope", "scope", "seq", "estimates"})


def renamed_schedule(text: str, recorded: dict[str, str], current: dict[str, str]) -> str:
    """Schedule JSON written for the algorithm whose canonical names were `recorded`, for
    its copy whose canonical names are `current` (both: object name -> canonical): every
    name of an object, or made from one (a loop `f_d0o`, a Func `B_global`), renamed."""
    by_canonical = {c: name for name, c in current.items()}
    mapping = {old: by_canonical[c] for old, c in recorded.items() if c in by_canonical}
    if all(old == new for old, new in mapping.items()):
        return text
    return json.dumps(_renamed(json.loads(text), mapping, _by_length(mapping)), indent=1)


def _renamed_entry(key: str, value: object, mapping: dict[str, str],
                   prefixes: list[str]) -> object:
    if key in _NOT_NAMES:
        return value
    if key == "calls":  # loop calls as written: [method, args, kwargs]
        return [[method, *_renamed(rest, mapping, prefixes)] for method, *rest in value]
    return _renamed(value, mapping, prefixes)


def _renamed(data: object, mapping: dict[str, str], prefixes: list[str]) -> object:
    if isinstance(data, dict):
        return {_renamed_name(k, mapping, prefixes): _renamed_entry(k, v, mapping, prefixes)
                for k, v in data.items()}
    if isinstance(data, list):
        return [_renamed(x, mapping, prefixes) for x in data]
    if isinstance(data, str):
        return _renamed_name(data, mapping, prefixes)
    return data
