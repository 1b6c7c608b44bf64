"""The lowering pipeline: the one place that lists the passes, in order.

`HALO_DEBUG=2` prints the IR after every pass; `HALO_DUMP_IR=dir` writes `NN_pass.txt`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from halo.ir import nodes as n
from halo.ir.printer import stmt_to_str
from halo.lang.environment import Environment
from halo.lower.bounds_inference import RegionCheck, bounds_inference
from halo.lower.context import LowerContext
from halo.lower.count_stores import count_stores, store_count_names
from halo.lower.partition_loops import partition_loops
from halo.lower.realization import decide_realizations
from halo.lower.schedule_functions import schedule_functions
from halo.lower.sliding_window import sliding_window
from halo.lower.storage_flattening import storage_flattening
from halo.lower.storage_folding import storage_folding
from halo.lower.unroll_loops import unroll_loops
from halo.lower.vectorize_loops import vectorize_loops


def _simplify(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    return ctx.simplifier.mutate(stmt)


PASSES = [
    # Loops from schedule records; needs ctx.compute_levels (decide_realizations).
    ("schedule_functions", schedule_functions),
    # Defines the loop-bound names schedule_functions left open; must see Realize and
    # ProducerConsumer nodes, so it runs before flattening.
    ("bounds_inference", bounds_inference),
    # Needs the compute-level region lets of bounds inference, and runs after storage
    # sizes are fixed: it only shrinks what is computed, inside the allocation.
    ("sliding_window", sliding_window),
    # Folds only the windows sliding_window recorded, and must rewrite Realize bounds and
    # coordinates before flattening turns them into flat indices.
    ("storage_folding", storage_folding),
    ("simplify", _simplify),
    # Needs bounds-inference lets for the allocation sizes.
    ("storage_flattening", storage_flattening),
    # Counts flat Stores, and serializes loops before unrolling and vectorization see
    # them; after every pass that decides what is computed (sliding_window).
    ("count_stores", count_stores),
    # After flattening: allocation sizes are fixed, so copying a loop with simpler
    # guards can't change them. Before unrolling and vectorization, so a guard is hoisted
    # once per loop rather than once per unrolled copy, and vector code is unmasked.
    ("partition_loops", partition_loops),
    # After simplification so extents are constants; before the final simplify so the
    # copies fold.
    ("unroll_loops", unroll_loops),
    ("simplify", _simplify),
    # Needs constant loop extents and flat indices (ramps of stride 1 are dense accesses).
    ("vectorize_loops", vectorize_loops),
    # Folds the strides the vectorizer builds (1 * 2 -> 2), so dense ones are literal 1s.
    ("simplify", _simplify),
]


@dataclass
class Lowered:
    """A lowered pipeline: the flat loop nest and what running it needs."""
    stmt: n.Stmt
    env: Environment
    checks: list[RegionCheck]
    # With count_stores: the Funcs whose stores the counts buffer counts, slot by slot.
    counted: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return stmt_to_str(self.stmt)


def lower(env: Environment, target: str = "host", count_stores: bool = False) -> Lowered:
    ctx = LowerContext(env, target, count_stores=count_stores)
    decide_realizations(ctx)
    debug = int(os.environ.get("HALO_DEBUG", "0") or 0)
    dump = os.environ.get("HALO_DUMP_IR")
    stmt: n.Stmt | None = None
    for i, (name, run) in enumerate(PASSES):
        stmt = run(stmt, ctx)
        if debug >= 2:
            print(f"--- after {name} ---\n{stmt_to_str(stmt)}")
        if dump:
            Path(dump).mkdir(parents=True, exist_ok=True)
            Path(dump, f"{i:02d}_{name}.txt").write_text(stmt_to_str(stmt))
    return Lowered(stmt, env, ctx.checks, store_count_names(ctx) if count_stores else [])
