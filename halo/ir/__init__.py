"""The loop IR: nodes, traversal, substitution, and the canonical printer."""
from halo.ir import nodes, types
from halo.ir.printer import expr_to_str, stmt_to_str

__all__ = ["nodes", "types", "expr_to_str", "stmt_to_str"]
