"""The lowering pipeline: the one place that lists the passes, in order.

`passes(target)` is the list for one target, a literal list with the reason for each
ordering constraint beside it; a line that applies only to some targets says so (as
Halide's Lower.cpp does). `lower(env, target)` runs them; `stop_after=name` stops after
the first pass of that name (tests look at the IR a pass leaves).

`HALO_DEBUG=2` prints the IR after every pass; `HALO_DUMP_IR=dir` writes `NN_pass.txt`.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from halo.analysis.simplify import sharing
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.printer import stmt_to_str
from halo.lang.environment import Environment
from halo.lower.block_registers import block_registers
from halo.lower.bounds_inference import RegionCheck, bounds_inference
from halo.lower.context import LowerContext
from halo.lower.count_stores import count_stores, store_count_names
from halo.lower.double_buffering import double_buffering
from halo.lower.fuse_gpu_thread_loops import fuse_gpu_thread_loops
from halo.lower.gpu_levels import gpu_levels
from halo.lower.hoist_guards import hoist_guards
from halo.lower.inject_virtual_threads import inject_virtual_threads
from halo.lower.partition_loops import partition_loops
from halo.lower.pipeline_tensor_calls import pipeline_tensor_calls
from halo.lower.realization import decide_realizations
from halo.lower.schedule_functions import schedule_functions
from halo.lower.sliding_window import sliding_window
from halo.lower.storage_flattening import storage_flattening
from halo.lower.storage_folding import storage_folding
from halo.lower.tensorize import tensorize
from halo.lower.unroll_loops import unroll_loops
from halo.lower.vectorize_loops import vectorize_loops
from halo.lower.warp_lanes import warp_lanes
from halo.lower.warp_reductions import warp_reductions
from halo.target import Target, TargetKind

Pass = Callable[[n.Stmt | None, LowerContext], n.Stmt | None]


def _simplify(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    return ctx.simplifier.mutate(stmt)


def passes(target: Target) -> list[tuple[str, Pass]]:
    """The passes that lower a pipeline for `target`, in order."""
    gpu = target.kind is TargetKind.CUDA
    return [
        # Decides where each Func is computed and stored (ctx.compute_levels), before any
        # loop exists; it builds no IR.
        ("decide_realizations", decide_realizations),
        # Loops from schedule records; needs ctx.compute_levels.
        ("schedule_functions", schedule_functions),
        # Defines the loop-bound names schedule_functions left open; must see Realize and
        # ProducerConsumer nodes, so it runs before flattening.
        ("bounds_inference", bounds_inference),
        # Needs the compute-level region lets of bounds inference, and runs after storage
        # sizes are fixed: it only shrinks what is computed, inside the allocation.
        ("sliding_window", sliding_window),
        # Folds only the windows sliding_window recorded, and must rewrite Realize bounds
        # and coordinates before flattening turns them into flat indices.
        ("storage_folding", storage_folding),
        ("simplify", _simplify),
        # After bounds inference, which sees the loops it replaces (they touch what the
        # call touches), and after simplification, so their extents are constants; before
        # flattening, so accesses have coordinates to compare with the spec's.
        ("tensorize", tensorize),
        # GPU only: checks that every stage runs in a kernel and picks each Realize's memory
        # by its level (host, block, thread); before flattening, which sizes shared and
        # local buffers by constant bounds.
        *([("gpu_levels", gpu_levels)] if gpu else []),
        # GPU only: a block-level Func in "local" memory as each thread's part; after
        # gpu_levels (which allows it there), before flattening, which sizes the part.
        *([("block_registers", block_registers)] if gpu else []),
        # GPU only: lanes for warp-scoped tensor calls; after gpu_levels, which checks the
        # thread loops as the schedule wrote them.
        *([("warp_lanes", warp_lanes)] if gpu else []),
        # GPU only: an associative update's reduction loop bound to threads as partials
        # combined by warp shuffles; after gpu_levels (the partials are registers), before
        # flattening (it rewrites the update's Provide, whose form it recognizes).
        *([("warp_reductions", warp_reductions)] if gpu else []),
        # Needs bounds-inference lets for the allocation sizes.
        ("storage_flattening", storage_flattening),
        # GPU only: double-buffered Funcs' loops pipelined over their copies; needs flat,
        # constant-size shared buffers and indices relative to each iteration's region;
        # before partitioning and unrolling, which copy the loop it rewrites, and before
        # vectorization, which widens its asynchronous copies.
        *([("double_buffering", double_buffering)] if gpu else []),
        # GPU only: vthread loops as interleaved copies inside the threads; needs flat
        # buffers of constant size (each copy gets its part); before partitioning and
        # unrolling, which then see the copies.
        *([("inject_virtual_threads", inject_virtual_threads)] if gpu else []),
        # Only for Target(count_stores=True). Counts flat Stores, and serializes loops
        # before unrolling and vectorization see them; after every pass that decides what
        # is computed (sliding_window).
        *([("count_stores", count_stores)] if target.count_stores else []),
        # After flattening: allocation sizes are fixed, so copying a loop with simpler
        # guards can't change them. Before unrolling and vectorization, so a guard is
        # hoisted once per loop rather than once per unrolled copy, and vector code is
        # unmasked.
        ("partition_loops", partition_loops),
        # After partitioning, which looks for guards where the schedule put them (its fast
        # copies have none left); before unrolling, which would copy each guard.
        ("hoist_guards", hoist_guards),
        # After simplification so extents are constants; before the final simplify so the
        # copies fold.
        ("unroll_loops", unroll_loops),
        ("simplify", _simplify),
        # Needs constant loop extents and flat indices (ramps of stride 1 are dense
        # accesses, which the CUDA backend turns into accesses of up to 16 bytes).
        ("vectorize_loops", vectorize_loops),
        # Folds the strides the vectorizer builds (1 * 2 -> 2), so dense ones are literal 1s.
        ("simplify", _simplify),
        # GPU only, last: the simplifier would drop its barriers (pure calls evaluated for
        # nothing); needs flat, constant-size shared buffers.
        *([("fuse_gpu_thread_loops", fuse_gpu_thread_loops)] if gpu else []),
        # GPU only: moves the barriers fuse_gpu_thread_loops placed at the top of a
        # tensor call's k loop into the call, to overlap the next step's operand loads.
        *([("pipeline_tensor_calls", pipeline_tensor_calls)] if gpu else []),
    ]


@dataclass
class Lowered:
    """A lowered pipeline: the flat loop nest and what running it needs."""
    stmt: n.Stmt
    env: Environment
    checks: list[RegionCheck]
    # With count_stores: the Funcs whose stores the counts buffer counts, slot by slot.
    counted: list[str] = field(default_factory=list)
    # The context the passes shared (for tests and tools that look inside).
    ctx: LowerContext | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return stmt_to_str(self.stmt)


def lower(env: Environment, target: Target, stop_after: str | None = None,
          skip: Collection[str] = ()) -> Lowered:
    """Run `passes(target)` over the pipeline `env`, up to and including the first pass
    named `stop_after` (all of them by default), leaving out those named in `skip`."""
    pipeline = passes(target)
    names = [name for name, _ in pipeline]
    for name in [stop_after, *skip]:
        if name is not None and name not in names:
            raise InternalError(f"no lowering pass named {name!r}; the passes are {names}")
    ctx = LowerContext(env, target)
    debug = int(os.environ.get("HALO_DEBUG", "0") or 0)
    dump = os.environ.get("HALO_DUMP_IR")
    stmt: n.Stmt | None = None
    # Every pass's simplifications share the simplifier's memos (`sharing`).
    with sharing(ctx.simplifier):
        for i, (name, run) in enumerate(pipeline):
            if name not in skip:
                stmt = run(stmt, ctx)
                if debug >= 2 and stmt is not None:
                    print(f"--- after {name} ---\n{stmt_to_str(stmt)}")
                if dump and stmt is not None:
                    Path(dump).mkdir(parents=True, exist_ok=True)
                    Path(dump, f"{i:02d}_{name}.txt").write_text(stmt_to_str(stmt))
            if name == stop_after:
                break
    counted = store_count_names(ctx) if target.count_stores else []
    return Lowered(stmt, env, ctx.checks, counted, ctx)
