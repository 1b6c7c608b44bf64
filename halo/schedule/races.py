"""When may the loops of an update stage run out of their written order?

An update `f[lhs] = value` over an RDom visits its domain in order; running an RVar loop
in parallel or vectorized, or reordering RVar loops, changes that order. halo allows it
without the user's say-so only when the changed order can't change the result: the
iterations involved touch disjoint points of f. It proves that from two facts:

* every read of f (in the value, the left side and the RDom predicate) is at exactly
  the point being written, so an iteration depends on no other iteration's write; and
* each reduction variable `r` that moves (for a reorder: of one loop of each pair that
  swaps) has a dimension of the left side of the form
  `c * r + g` (`c` a nonzero constant, `g` free of every reduction variable that varies
  at the same time), so two iterations that differ in `r` write different points.

Pure variables always qualify: an update reads and writes f at its own pure point. A
reorder is also fine when the update's result doesn't depend on the order at all (an
exactly associative and commutative `f = f op e`, see `UpdateStage._order_free`).
Otherwise the error names the ways out: `rfactor`, `.atomic()`, `.allow_race_conditions()`.
"""
from __future__ import annotations

from collections.abc import Iterable

from halo.analysis.loops import Fuse, LoopTransform, Split
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.substitute import var_names
from halo.ir.visitor import walk
from halo.schedule.records import Dim


def self_read_problem(func: str, args: tuple[n.Expr, ...], value: n.Expr,
                      predicate: n.Expr | None) -> str | None:
    """Why the update reads `func` at a point other than the one it writes, or None."""
    lhs = n.Call(value.type, func, args, n.CallKind.FUNC)
    roots = [value, *args, *([predicate] if predicate is not None else [])]
    for root in roots:
        for node in walk(root):
            if isinstance(node, n.Call) and node.name == func and \
                    (root is not value or node.args != args):
                return (f"it reads {expr_to_str(node)} while writing {expr_to_str(lhs)}, "
                        "so one iteration may need another's result")
    return None


def _affine_in(e: n.Expr, var: str, moving: set[str]) -> bool:
    """e == c * var + g with a nonzero constant c and g free of `moving` (and var)."""
    def free(x: n.Expr) -> bool:
        return not (var_names(x) & (moving | {var}))

    match e:
        case n.Var(name=name):
            return name == var
        case n.Add(a=a, b=b) | n.Sub(a=a, b=b):
            return (_affine_in(a, var, moving) and free(b)) or \
                (free(a) and _affine_in(b, var, moving))
        case n.Mul(a=a, b=n.Const(value=c)) | n.Mul(a=n.Const(value=c), b=a):
            return c != 0 and _affine_in(a, var, moving)
    return False


def distinct_points_problem(func: str, args: tuple[n.Expr, ...], rvars: set[str],
                            vars_: frozenset[str], moving: set[str]) -> str | None:
    """Why two iterations differing in some of `vars_` (while all of `moving` vary) might
    write the same point of `func`, or None."""
    for var in sorted(vars_ & rvars):
        if not any(_affine_in(a, var, moving & rvars) for a in args):
            lhs = expr_to_str(n.Call(n.Var("_").type, func, args, n.CallKind.FUNC))
            return (f"the left side {lhs} does not tell the values of {var} apart, so "
                    "two iterations may update the same point")
    return None


def regroupings(initial: list[str], rvars: set[str], transforms: Iterable[LoopTransform],
                dims: list[Dim]) -> tuple[list[tuple[str, str]], dict[str, frozenset[str]]]:
    """The pairs of loops over reduction variables whose relative order `dims` (the
    stage's loops, outermost first) changed from the order the splits alone give
    (`initial` dimensions, outermost first), and every loop's source variables. Checked
    together at each call, they can't drift from what was allowed.

    The order is compared on leaf loops: a fused loop runs its outer loop's leaves, then
    its inner loop's, at its own place, so fusing a pure loop with a reduction loop (or
    moving the fused loop) swaps only what its reduction leaves pass. Splitting a fused
    loop makes its two halves leaves, at the place of its first leaf: the swaps that
    gathering its leaves there makes are counted at that split. Two iterations whose
    order flips differ in both loops of such a pair (the first loop they differ in before
    and after the change), so it is enough that one loop of each pair writes different
    points for different values."""
    order = list(initial)
    leaves = {name: (name,) for name in initial}
    sources = {name: frozenset({name}) for name in initial}

    def flips(seq: list[str]) -> list[tuple[str, str]]:
        rank = {leaf: i for i, leaf in enumerate(order)}
        carried = [leaf for leaf in seq if sources[leaf] & rvars]
        return [(a, b) for i, a in enumerate(carried) for b in carried[i + 1:]
                if rank[a] > rank[b]]

    pairs: list[tuple[str, str]] = []
    for t in transforms:
        if isinstance(t, Split):
            sources[t.outer] = sources[t.inner] = sources[t.old]
            old = leaves[t.old]
            at = min(order.index(leaf) for leaf in old)
            rest = [leaf for leaf in order if leaf not in old]
            pairs += flips([*rest[:at], *old, *rest[at:]])
            order = [*rest[:at], t.outer, t.inner, *rest[at:]]
            leaves[t.outer], leaves[t.inner] = (t.outer,), (t.inner,)
        elif isinstance(t, Fuse):
            sources[t.fused] = sources[t.outer] | sources[t.inner]
            leaves[t.fused] = leaves[t.outer] + leaves[t.inner]
    pairs += flips([leaf for d in dims for leaf in leaves[d.name]])
    return list(dict.fromkeys(pairs)), sources


WAYS_OUT = ("rfactor(...) (an associative update becomes a parallel intermediate plus a "
            "merge), .atomic() on this stage first (atomic updates), or "
            ".allow_race_conditions() on this stage first (at your own risk)")
