"""IR as JSON text and back: what the on-disk cache of lowered pipelines stores.

`encode(value, classes)` writes a value made of frozen dataclasses (IR nodes, types, and
records such as bounds inference's region checks), enums, tuples, lists, strings,
numbers, booleans and None; `decode(text, classes)` rebuilds an equal value. `classes`
names every dataclass and enum the value may hold (`classes_of(module, ...)`); a value
of any other class is a `TypeError` (an object such as an Intrinsic has no text form).

The text is a table of the nodes, each written once, children first: a subtree shared
by several parents (lowering reuses them: one loop bound read by many lets) is one row,
so the text grows with the distinct nodes, not with the printed tree. A row is
`[class, field...]`; a field that is a node is the row's number, any other value is
boxed by kind (`["i", 3]`, `["t", ...]`), so no number is read as a row.
"""
from __future__ import annotations

import dataclasses
import enum
import json
from types import ModuleType

_FORMAT = 1


def classes_of(*modules: ModuleType) -> dict[str, type]:
    """The dataclasses and enums defined in `modules`, by qualified name."""
    found = {}
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__ and \
                    (dataclasses.is_dataclass(value) or issubclass(value, enum.Enum)):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def encode(value: object, classes: dict[str, type]) -> str:
    """`value` as JSON text that `decode(text, classes)` turns back into it."""
    names = {cls: name for name, cls in classes.items()}
    tags: dict[type, int] = {}
    rows: list[list] = []
    rows_of: dict[int, int] = {}  # id(node) -> its row (every node lives while this runs)

    def tag(cls: type) -> int:
        if cls not in tags:
            if cls not in names:
                raise TypeError(f"{cls.__qualname__} values have no text form")
            tags[cls] = len(tags)
        return tags[cls]

    def field(v: object) -> object:
        if v is None or isinstance(v, (str, bool)):
            return v
        if isinstance(v, int):
            return ["i", v]
        if isinstance(v, float):
            return ["f", v]
        if isinstance(v, tuple):
            return ["t", *map(field, v)]
        if isinstance(v, list):
            return ["l", *map(field, v)]
        if isinstance(v, enum.Enum):
            return ["e", tag(type(v)), v.name]
        row = rows_of.get(id(v))
        if row is None:
            if not dataclasses.is_dataclass(v):
                raise TypeError(f"{type(v).__qualname__} values have no text form")
            cls = type(v)
            fields = [field(getattr(v, f.name)) for f in dataclasses.fields(v)]
            row = rows_of[id(v)] = len(rows)
            rows.append([tag(cls), *fields])
        return row

    root = field(value)
    return json.dumps({"format": _FORMAT, "classes": [names[c] for c in tags],
                       "rows": rows, "root": root}, separators=(",", ":"))


def decode(text: str, classes: dict[str, type]) -> object:
    """The value `encode` wrote as `text`; a `ValueError` if the text is not such a value
    of `classes`."""
    try:
        data = json.loads(text)
        if data["format"] != _FORMAT:
            raise ValueError(f"format {data['format']!r}, not {_FORMAT}")
        kinds = [classes[name] for name in data["classes"]]
        nodes: list[object] = []

        def field(v: object) -> object:
            if type(v) is int:
                return nodes[v]
            if type(v) is list:
                kind = v[0]
                if kind == "t":
                    return tuple(map(field, v[1:]))
                if kind == "l":
                    return list(map(field, v[1:]))
                if kind == "e":
                    return kinds[v[1]][v[2]]
                return v[1]  # "i" or "f": the number itself
            return v

        for tag, *fields in data["rows"]:
            nodes.append(kinds[tag](*map(field, fields)))
        return field(data["root"])
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"not an encoded IR value ({type(e).__name__}: {e})") from None
