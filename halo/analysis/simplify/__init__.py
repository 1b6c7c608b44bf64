"""The simplifier: rule tables by operator family, a complete constant folder, and a
driver for expressions and statements.

    simplify(node)       an equivalent, simpler Expr or Stmt
    simplify_where(e, ranges)  `e` where variables lie in constant ranges
    can_prove(cond)      whether cond simplifies to the constant true
    Simplifier           the driver, to reuse its memo across many calls

Modules: `simplifier.py` (driver, statement rules), `pattern.py` (the rule language),
`fold.py` (constant folding), `linear.py` (linear forms of integer expressions),
`const_bounds.py` (constant ranges), and the tables `arith.py`, `minmax.py`,
`compare.py`, `cast.py`.
"""
from halo.analysis.simplify.simplifier import (
    Simplifier,
    can_prove,
    shared_simplifier,
    sharing,
    simplify,
    simplify_where,
)

__all__ = ["Simplifier", "can_prove", "shared_simplifier", "sharing", "simplify",
           "simplify_where"]
