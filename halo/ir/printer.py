"""The canonical printer: deterministic, Python-like text for expressions and loop nests.

It is both the debug view (`str(f.lower())`) and the format of golden tests, so a change
here changes every golden file. int32, float32 and bool constants print bare; constants
and casts of other types print as `uint8(3)`.
"""
from __future__ import annotations

from halo.ir import nodes as n
from halo.ir.types import bool_, float32, int32

_BARE_TYPES = (int32, float32, bool_)

# (operator text, precedence); higher binds tighter, as in Python.
_BINARY = {
    n.Or: (" or ", 1), n.And: (" and ", 2),
    n.EQ: (" == ", 4), n.NE: (" != ", 4), n.LT: (" < ", 4), n.LE: (" <= ", 4),
    n.Add: (" + ", 9), n.Sub: (" - ", 9),
    n.Mul: (" * ", 10), n.Div: (" / ", 10), n.Mod: (" % ", 10),
}
_BITWISE = {n.Or: (" | ", 5), n.Xor: (" ^ ", 6), n.And: (" & ", 7)}


def _const_text(c: n.Const) -> str:
    t = c.type
    if t.is_bool:
        text = "True" if c.value else "False"
    elif t.is_float:
        v = c.value
        text = repr(float(v)) if v == v and abs(v) != float("inf") else f"float('{v}')"
    else:
        text = str(c.value)
    return text if t in _BARE_TYPES else f"{t}({text})"


def expr_to_str(e: n.Expr, parent_prec: int = 0) -> str:
    text, prec = _expr(e)
    return f"({text})" if prec < parent_prec else text


def _expr(e: n.Expr) -> tuple[str, int]:
    atom = 100
    match e:
        case n.Const():
            text = _const_text(e)
            return text, (atom if not text.startswith("-") else 11)
        case n.Var(name=name):
            return name, atom
        case n.Cast(type=t, value=v):
            return f"{t}({expr_to_str(v)})", atom
        case n.Min(a=a, b=b):
            return f"min({expr_to_str(a)}, {expr_to_str(b)})", atom
        case n.Max(a=a, b=b):
            return f"max({expr_to_str(a)}, {expr_to_str(b)})", atom
        case n.Add(a=a, b=n.Const(value=v) as c) if v < 0 and v != c.type.min_value():
            # x + -3 reads as x - 3
            return expr_to_str(a, 9) + " - " + _const_text(n.Const(c.type, -v)), 9
        case n.Xor() | n.And() | n.Or() if not e.a.type.is_bool or type(e) is n.Xor:
            op, prec = _BITWISE[type(e)]
            return expr_to_str(e.a, prec) + op + expr_to_str(e.b, prec + 1), prec
        case n.Div(a=a, b=b) if a.type.is_integer:
            return expr_to_str(a, 10) + " // " + expr_to_str(b, 11), 10
        case n.BinaryOp(a=a, b=b):
            op, prec = _BINARY[type(e)]
            return expr_to_str(a, prec) + op + expr_to_str(b, prec + 1), prec
        case n.Not(a=a) if a.type.is_bool:
            return "not " + expr_to_str(a, 3), 3
        case n.Not(a=a):
            return "~" + expr_to_str(a, 12), 12
        case n.Select(condition=c, true_value=t, false_value=f):
            return f"select({expr_to_str(c)}, {expr_to_str(t)}, {expr_to_str(f)})", atom
        case n.Call(name=name, args=args, kind=n.CallKind.MATH | n.CallKind.INTRINSIC):
            return f"{name}({', '.join(expr_to_str(a) for a in args)})", atom
        case n.Call(name=name, args=args):
            return f"{name}[{', '.join(expr_to_str(a) for a in args)}]", atom
        case n.Load(name=name, index=index, predicate=None):
            return f"{name}[{expr_to_str(index)}]", atom
        case n.Load(name=name, index=index, predicate=p):
            return f"{name}[{expr_to_str(index)}, mask={expr_to_str(p)}]", atom
        case n.Ramp(base=b, stride=st, lanes=lanes):
            return f"ramp({expr_to_str(b)}, {expr_to_str(st)}, {lanes})", atom
        case n.Broadcast(value=v, lanes=lanes):
            return f"broadcast({expr_to_str(v)}, {lanes})", atom
        case n.Let(name=name, value=v, body=b):
            return f"let({name}={expr_to_str(v)}, {expr_to_str(b)})", atom
    raise TypeError(f"not an expression: {e!r}")


def _range_text(lo: n.Expr, extent: n.Expr) -> str:
    """The arguments of `range(...)` for a loop from `lo` running `extent` times."""
    if isinstance(lo, n.Const) and lo.value == 0:
        return expr_to_str(extent)
    if isinstance(lo, n.Const) and isinstance(extent, n.Const):
        return f"{lo.value}, {lo.value + extent.value}"
    match extent:  # extent == hi - lo + c (bounds inference writes c = 1): range(lo, hi + c)
        case n.Add(a=n.Sub(a=hi, b=lo2), b=n.Const(value=c)) if lo2 == lo:
            return f"{expr_to_str(lo)}, {expr_to_str(n.Add(hi, n.Const(extent.type, c)))}"
    return f"{expr_to_str(lo)}, {expr_to_str(n.Add(lo, extent))}"


def stmt_to_str(s: n.Stmt, indent: int = 0) -> str:
    lines: list[str] = []
    _stmt(s, indent, lines)
    return "\n".join(lines) + "\n"


def _stmt(s: n.Stmt, ind: int, out: list[str]) -> None:
    pad = "  " * ind
    match s:
        case n.Block(stmts=stmts):
            if not stmts:
                out.append(pad + "pass")
            for c in stmts:
                _stmt(c, ind, out)
        case n.LetStmt(name=name, value=v, body=b):
            out.append(f"{pad}{name} = {expr_to_str(v)}")
            _stmt(b, ind, out)
        case n.For(name=name, min=lo, extent=ext, kind=kind, body=b):
            word = "range" if kind is n.ForKind.SERIAL else kind.value
            out.append(f"{pad}for {name} in {word}({_range_text(lo, ext)}):")
            _stmt(b, ind + 1, out)
        case n.IfThenElse(condition=c, then_case=t, else_case=e):
            out.append(f"{pad}if {expr_to_str(c)}:")
            _stmt(t, ind + 1, out)
            if e is not None:
                out.append(f"{pad}else:")
                _stmt(e, ind + 1, out)
        case n.Evaluate(value=v):
            out.append(pad + expr_to_str(v))
        case n.Provide(name=name, value=v, args=args):
            out.append(f"{pad}{name}[{', '.join(expr_to_str(a) for a in args)}] = {expr_to_str(v)}")
        case n.Store(name=name, index=i, value=v, predicate=p):
            mask = "" if p is None else f", mask={expr_to_str(p)}"
            out.append(f"{pad}{name}[{expr_to_str(i)}{mask}] = {expr_to_str(v)}")
        case n.Atomic(body=b):
            out.append(f"{pad}atomic:")
            _stmt(b, ind + 1, out)
        case n.TensorCall(name=name, part=part, operand_names=names, operands=ops,
                          strides=strides, ahead=ahead, first=first, overlap=overlap,
                          handoff=handoff):
            args = [f"{nm}={expr_to_str(o)}" for nm, o in zip(names, ops, strict=True)]
            if strides:
                args = [f"{a} strides ({', '.join(expr_to_str(x) for x in st)})"
                        for a, st in zip(args, strides, strict=True)]
            out.append(f"{pad}{name}.{part}({', '.join(args)})")
            if first is not None:  # pipelined with its loop
                nexts = ", ".join(f"{nm}={expr_to_str(o)}"
                                  for nm, o in zip(names, ahead, strict=True))
                out.append(f"{pad}  pipelined with its loop (first iteration: "
                           f"{expr_to_str(first)}; next: {nexts})")
                for label, part_stmt in (("after its first step", overlap),
                                         ("before it reads the next", handoff)):
                    if part_stmt is not None:
                        out.append(f"{pad}  {label}:")
                        _stmt(part_stmt, ind + 2, out)
        case n.Realize(name=name, type=t, bounds=bounds, body=b, scope=scope):
            dims = ", ".join(f"{expr_to_str(lo)}:{expr_to_str(n.Add(lo, ext))}"
                             for lo, ext in bounds)
            where = "" if scope == "auto" else f" in {scope}"
            out.append(f"{pad}realize {name}[{dims}] as {t}{where}:")
            _stmt(b, ind + 1, out)
        case n.Allocate(name=name, type=t, size=size, body=b, scope=scope):
            out.append(f"{pad}allocate {name}[{expr_to_str(size)}] as {t} in {scope}:")
            _stmt(b, ind + 1, out)
        case n.ProducerConsumer(name=name, produce=p, consume=c):
            out.append(f"{pad}produce {name}:")
            _stmt(p, ind + 1, out)
            if c != n.NO_OP:  # an output that nothing reads consumes nothing
                _stmt(c, ind, out)
        case _:
            raise TypeError(f"not a statement: {s!r}")


# A loop nest shows loop lines up to this long; longer bounds (a partitioned loop's
# nested clamps reach a thousand characters) print as `...`, as stores do.
_LONGEST_LINE = 160


def loop_nest_to_str(s: n.Stmt) -> str:
    """Only the structure: produce blocks, loops (with kinds; bounds that would make the
    line longer than `_LONGEST_LINE` as `...`) and storage, no arithmetic."""
    lines: list[str] = []

    def visit(s: n.Stmt, ind: int) -> None:
        pad = "  " * ind
        match s:
            case n.Block(stmts=stmts):
                for c in stmts:
                    visit(c, ind)
            case n.For(name=name, min=lo, extent=ext, kind=kind, body=b):
                word = "range" if kind is n.ForKind.SERIAL else kind.value
                line = f"{pad}for {name} in {word}({_range_text(lo, ext)}):"
                if len(line) > _LONGEST_LINE:
                    line = f"{pad}for {name} in {word}(...):"
                lines.append(line)
                visit(b, ind + 1)
            case n.ProducerConsumer(name=name, produce=p, consume=c):
                lines.append(f"{pad}produce {name}:")
                visit(p, ind + 1)
                visit(c, ind)
            case n.Realize(name=name, body=b) | n.Allocate(name=name, body=b):
                lines.append(f"{pad}allocate {name} in {s.scope}:")
                visit(b, ind + 1)
            case n.Atomic(body=b):
                lines.append(f"{pad}atomic:")
                visit(b, ind + 1)
            case n.LetStmt(body=b):
                visit(b, ind)
            case n.IfThenElse(condition=c, then_case=t, else_case=e) if e is not None:
                # two loop nests chosen at run time (a specialization)
                lines.append(f"{pad}if {expr_to_str(c)}:")
                visit(t, ind + 1)
                lines.append(f"{pad}else:")
                visit(e, ind + 1)
            case n.IfThenElse(then_case=t):
                visit(t, ind)
            case n.Provide(name=name) | n.Store(name=name):
                lines.append(f"{pad}{name}[...] = ...")
            case n.TensorCall(name=name, part=part):
                lines.append(f"{pad}{name}.{part}(...)")

    visit(s, 0)
    out: list[str] = []
    for line in lines:  # consecutive stores to the same buffer print once
        if not (out and line == out[-1] and line.endswith("= ...")):
            out.append(line)
    return "\n".join(out) + "\n"
