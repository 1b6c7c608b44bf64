"""Linear forms of integer expressions: sum(coefficient * atom) + constant.

`LinearForms.of` reads an integer expression built from `Add`, `Sub`, `Mul` by a constant
and `Const` as an integer combination of *atoms*, where an atom is any other
subexpression (a Var, a Div, a Min, a Load, the product of two non-constants, ...).
Coefficients are exact (unbounded) integers. Integer arithmetic wraps modulo 2**bits, and
reducing modulo 2**bits commutes with `+`, `-` and `*`, so `LinearForm.to_expr` rebuilds
an expression equal to the original for every input, overflow or not. Decisions taken on
the exact coefficients (a comparison, a min) additionally assume the original does not
overflow; only rules in the NO_OVERFLOW domain take them.

`to_expr` is canonical: Var atoms sorted by name, then other atoms in order of first
appearance; positive terms first, then subtracted ones, then the constant, added even when
negative for signed types (`Add(x, -1)`, which prints as `x - 1`). Atoms are keyed by
their structure number (structure.py), so looking one up costs O(1) whatever its size.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import gcd

from halo.analysis.simplify.structure import StructureIds
from halo.ir import nodes as n
from halo.ir.types import Type


def wrap(value: int, t: Type) -> int:
    """`value` modulo 2**bits, as the representative in [-2**(bits-1), 2**(bits-1))."""
    half = 1 << (t.bits - 1)
    return (value + half) % (1 << t.bits) - half


@dataclass(frozen=True, slots=True, eq=False)
class Atom:
    """A non-linear subexpression, equal to another iff structurally identical."""

    expr: n.Expr
    number: int

    def __hash__(self) -> int:
        return self.number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Atom) and other.number == self.number


@dataclass(frozen=True, slots=True)
class LinearForm:
    """sum(terms[atom] * atom) + constant; no term has a zero coefficient."""

    terms: dict[Atom, int]
    constant: int

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def plus(self, other: LinearForm, scale: int = 1) -> LinearForm:
        """self + scale * other."""
        terms = dict(self.terms)
        for atom, k in other.terms.items():
            total = terms.get(atom, 0) + scale * k
            if total:
                terms[atom] = total
            else:
                terms.pop(atom, None)
        return LinearForm(terms, self.constant + scale * other.constant)

    def minus(self, other: LinearForm) -> LinearForm:
        return self.plus(other, -1)

    def scaled(self, k: int) -> LinearForm:
        if k == 0:
            return LinearForm({}, 0)
        return LinearForm({a: c * k for a, c in self.terms.items()}, self.constant * k)

    def divided(self, k: int) -> LinearForm:
        """self / k, for a `k` that divides every coefficient and the constant."""
        return LinearForm({a: c // k for a, c in self.terms.items()}, self.constant // k)

    def wrapped(self, t: Type) -> LinearForm:
        """The same value in `t`: the constant reduced modulo 2**bits into
        [-2**(bits-1), 2**(bits-1)), coefficients into (-2**(bits-1), 2**(bits-1)] (so
        that x*-128 in 8 bits stays the positive term x*128, which is the same value)."""
        half = 1 << (t.bits - 1)
        terms = {}
        for atom, k in self.terms.items():
            w = wrap(k, t)
            if w:
                terms[atom] = half if w == -half else w
        return LinearForm(terms, wrap(self.constant, t))

    def to_expr(self, t: Type) -> n.Expr:
        """The canonical expression of type `t` for this form (wrapped to `t`)."""
        form = self.wrapped(t)
        positive: list[n.Expr] = []
        negative: list[n.Expr] = []
        for atom, k in sorted(form.terms.items(), key=_atom_order(form.terms)):
            term = atom.expr if abs(k) == 1 else n.Mul(atom.expr, n.const(abs(k), t))
            (positive if k > 0 else negative).append(term)
        c = form.constant
        if positive:
            e = positive[0]
            for term in positive[1:]:
                e = n.Add(e, term)
        elif negative:
            e, c = n.const(c, t), 0
        else:
            return n.const(c, t)
        for term in negative:
            e = n.Sub(e, term)
        if c > 0 or (c < 0 and t.is_int):
            return n.Add(e, n.const(c, t))
        if c < 0:
            return n.Sub(e, n.const(-c, t))
        return e

    def coefficient_gcd(self) -> int:
        """The gcd of the coefficients (0 for a constant form)."""
        g = 0
        for k in self.terms.values():
            g = gcd(g, k)
        return g

    def sides(self) -> tuple[LinearForm, LinearForm]:
        """(P, N) with self == P - N, P holding the positive terms and the constant, N
        the negated negative terms."""
        pos = {a: k for a, k in self.terms.items() if k > 0}
        neg = {a: -k for a, k in self.terms.items() if k < 0}
        return LinearForm(pos, self.constant), LinearForm(neg, 0)


def _atom_order(terms: dict[Atom, int]) -> Callable[[tuple[Atom, int]], tuple]:
    position = {atom: i for i, atom in enumerate(terms)}

    def key(item: tuple[Atom, int]) -> tuple:
        atom = item[0].expr
        return (0, atom.name, 0) if isinstance(atom, n.Var) else (1, "", position[item[0]])
    return key


class LinearForms:
    """Linear forms of integer expressions, memoized by node identity (the memo keeps the
    nodes alive, so identities stay unique)."""

    def __init__(self, structure: StructureIds):
        self.structure = structure
        self._memo: dict[int, tuple[n.Expr, LinearForm]] = {}

    def atom(self, e: n.Expr) -> Atom:
        """`e` as an atom (keyed by its structure)."""
        return Atom(e, self.structure.of(e))

    def of(self, e: n.Expr) -> LinearForm:
        """The exact linear form of the integer expression `e`."""
        hit = self._memo.get(id(e))
        if hit is not None:
            return hit[1]
        match e:
            case n.Const(value=v):
                form = LinearForm({}, v)
            case n.Add(a=a, b=b):
                form = self.of(a).plus(self.of(b))
            case n.Sub(a=a, b=b):
                form = self.of(a).minus(self.of(b))
            case n.Mul(a=a, b=n.Const(value=k)):
                form = self.of(a).scaled(k)
            case n.Mul(a=n.Const(value=k), b=b):
                form = self.of(b).scaled(k)
            case _:
                form = LinearForm({self.atom(e): 1}, 0)
        self._memo[id(e)] = (e, form)
        return form

    def recombine_div_mod(self, form: LinearForm) -> LinearForm:
        """Replace k*c*(y // c) + k*(y % c) by k*y (c != 0): exact for every integer type,
        since y == c*(y // c) + y % c holds in the integers and so modulo 2**bits."""
        for atom, k in form.terms.items():
            mod = atom.expr
            if not (isinstance(mod, n.Mod) and isinstance(mod.b, n.Const) and mod.b.value):
                continue
            quotient = self.atom(n.Div(mod.a, mod.b))
            if form.terms.get(quotient) == k * mod.b.value:
                rest = {a: c for a, c in form.terms.items() if a != atom and a != quotient}
                return self.recombine_div_mod(
                    LinearForm(rest, form.constant).plus(self.of(mod.a), k))
        return form

    def with_remainders(self, form: LinearForm) -> LinearForm:
        """`form` with k*c*(y // c) rewritten as k*y - k*(y % c) (c > 0) where that cancels
        terms of k*y. The two are equal, and the remainder has the tight bounds [0, c - 1]
        where the quotient's are loose: min((d // 8)*8, d - 7) is d - 7 because
        (d // 8)*8 - (d - 7) == 7 - d % 8 >= 0."""
        for atom, m in form.terms.items():
            q = atom.expr
            if not (isinstance(q, n.Div) and isinstance(q.b, n.Const) and q.b.value > 0
                    and m % q.b.value == 0):
                continue
            k = m // q.b.value
            rest = LinearForm({a: v for a, v in form.terms.items() if a != atom}, form.constant)
            y = self.of(q.a)
            candidate = rest.plus(y, k)
            if len(candidate.terms) < len(rest.terms) + len(y.terms):
                remainder = LinearForm({self.atom(n.Mod(q.a, q.b)): 1}, 0)
                return self.with_remainders(candidate.plus(remainder, -k))
        return form
