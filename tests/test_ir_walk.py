"""walk_stmts: the statements `walk` finds, in the same order, without the expressions."""
import halo
from apps import unsharp
from halo.ir.nodes import Stmt
from halo.ir.visitor import walk, walk_stmts


def test_walk_stmts_finds_what_walk_finds_among_statements():
    _, out, funcs = unsharp.algorithm()
    unsharp.gpu_schedule(funcs, rows=8, columns=16, thread_rows=4)
    stmt = halo.Pipeline(out).lower(halo.Target("cuda", arch="sm_90")).stmt
    statements = list(walk_stmts(stmt))
    assert statements == [x for x in walk(stmt) if isinstance(x, Stmt)]
    assert len(statements) > 50
