"""lower/pipeline_tensor_calls.py: a tensor call pipelined with its multi-buffered k loop
(the loop's barrier moved into the call as its handoff, the loop's copies its overlap,
the operands of the next iteration its `ahead`), and where it must not be."""
from __future__ import annotations

from dataclasses import replace

import pytest

import halo
from apps import matmul
from halo import intrinsics
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str, stmt_to_str
from halo.ir.visitor import rewrite, walk
from halo.lang.environment import Environment
from halo.lower.double_buffering import GPU_ASYNC_COMMIT, GPU_ASYNC_COPY, GPU_ASYNC_WAIT
from halo.lower.fuse_gpu_thread_loops import SYNC_THREADS
from halo.lower.pipeline import lower
from halo.lower.pipeline_tensor_calls import pipeline_tensor_calls

CUDA = halo.Target("cuda", arch="sm_90")


def lowered(schedule, **sizes) -> n.Stmt:
    *_, C, funcs = matmul.algorithm_fp16()
    schedule(funcs, **sizes)
    return lower(Environment.of([C]), CUDA).stmt


def calls_named(stmt: n.Stmt, name: str) -> list[n.Call]:
    return [x for x in walk(stmt) if isinstance(x, n.Call) and x.name == name]


def k_loops(stmt: n.Stmt) -> list[n.For]:
    return [x for x in walk(stmt) if isinstance(x, n.For) and x.name.endswith(".ko")]


def test_the_k_loops_of_the_register_tensor_core_matmul_are_pipelined():
    stmt = lowered(matmul.gpu_schedule_tensor_core)  # k steps of 64 in 3 stages
    loops = k_loops(stmt)
    assert len(loops) > 1  # the steady state and the last steps (partition_loops)
    for loop in loops:
        guard, chain = loop.body.stmts
        first = n.EQ(n.Var(loop.name), loop.min)
        # the barrier opens the first iteration only ...
        assert isinstance(guard, n.IfThenElse) and guard.condition == first
        assert [s.value.name for s in guard.then_case.stmts] == [GPU_ASYNC_WAIT, SYNC_THREADS]
        (call,) = [x for x in walk(chain) if isinstance(x, n.TensorCall)]
        # ... and is the call's handoff in every iteration
        assert call.first == first and call.handoff == guard.then_case
        # the loop's copies (and their commit) are the call's overlap, without barriers
        assert calls_named(call.overlap, GPU_ASYNC_COPY)
        assert calls_named(call.overlap, GPU_ASYNC_COMMIT)
        assert not calls_named(call.overlap, SYNC_THREADS)
        assert not calls_named(call.overlap, GPU_ASYNC_WAIT)
        # the next iteration's operands: the next slot of each panel
        names = dict(zip(call.operand_names, call.ahead, strict=True))
        a = expr_to_str(names["mma_f16_f32_64x64x64_a"])
        assert f"({loop.name} + 1) % 3 * " in a, a
        assert names["mma_f16_f32_64x64x64_spec"] == call.operands[0]  # the accumulators
        # nothing of the loop is left outside the call
        assert len(calls_named(chain, GPU_ASYNC_COPY)) == len(
            calls_named(call.overlap, GPU_ASYNC_COPY))
    assert "pipelined with its loop" in stmt_to_str(stmt)


def shared_accumulators(funcs) -> None:
    """gpu_schedule_tensor_core's blocks, warps and multi-buffered panels, with the
    accumulators in shared memory (each call loads and stores its tile)."""
    i, j, k = *halo.vars("i j"), funcs["k"]
    io, jo, ii, ji, wi, wj, ti, tj, ko, ki = halo.vars("io jo ii ji wi wj ti tj ko ki")
    C, mma = funcs["C"], intrinsics.mma_f16_f32(64, 64, 64)
    C_acc = C.cache_write("shared")
    C.tile(i, j, io, jo, ii, ji, 128, 128).gpu_blocks(io, jo)
    C.tile(ii, ji, wi, wj, ti, tj, 64, 64).gpu_threads(wi, wj)
    C.tensorize(ti, intrinsics.mma_f32_store(64, 64))
    C_acc.compute_at(C, jo)
    C_acc.tile(i, j, wi, wj, ti, tj, 64, 64).gpu_threads(wi, wj).tensorize(ti, mma)
    update = C_acc.update(0)
    update.split(k, ko, ki, 64).tile(i, j, wi, wj, ti, tj, 64, 64)
    update.reorder(ko, wi, wj, ti, tj, ki).gpu_threads(wi, wj).tensorize(ti, mma)
    for panel, shape in ((funcs["A_in"].cache_read("shared", [C_acc]), (128, 64)),
                         (funcs["B_in"].cache_read("shared", [C_acc]), (64, 128))):
        panel.compute_at(update, ko)
        matmul._copied_by_threads(panel, (2, 2), shape)
        panel.double_buffer(3)


def test_accumulators_in_shared_memory_keep_their_barrier():
    """A call that writes shared memory needs the barrier where the loop had it, though
    the loop has the pipelined form (copies in flight) otherwise."""
    stmt = lowered(shared_accumulators)
    calls = [x for x in walk(stmt) if isinstance(x, n.TensorCall) and x.part == "update"]
    assert calls and all(c.first is None for c in calls)
    for loop in k_loops(stmt):
        assert [s.value.name for s in loop.body.stmts[:2]] == [GPU_ASYNC_WAIT, SYNC_THREADS]


def _barrier_in_the_work(loop: n.For) -> n.For:
    wait, barrier, *work, chain = loop.body.stmts
    return replace(loop, body=n.block(wait, barrier, work[0], barrier, *work[1:], chain))


def _half_the_warps(loop: n.For) -> n.For:
    *rest, chain = loop.body.stmts
    return replace(loop, body=n.block(*rest, replace(chain, extent=n.const(
        chain.extent.value // 2))))


def _an_operand_moving_with_the_loop(loop: n.For) -> n.For:
    def moved(x):
        if not isinstance(x, n.TensorCall):
            return None
        a = x.operands[1]
        index = n.Add(a.index, n.Mul(n.Var(loop.name), n.const(64)))
        return replace(x, operands=(x.operands[0], replace(a, index=index), *x.operands[2:]))
    return rewrite(loop, moved)


@pytest.mark.parametrize(("change", "pipelined"), [
    (lambda loop: loop, True), (_barrier_in_the_work, False), (_half_the_warps, False),
    (_an_operand_moving_with_the_loop, False)],
    ids=["as lowered", "a barrier among the copies", "warps of half the block",
         "an operand not in a slot"])
def test_a_k_loop_is_pipelined_only_where_that_is_sound(change, pipelined):
    """The steady k loop of the register tensor-core matmul as the passes before leave it,
    changed: a barrier of its own among the copies (they may not move past it), thread
    loops around the call that leave part of the block out (some threads would never
    reach the handoff's barrier), an operand whose index moves with the loop other than
    through its slot (the last iteration would read ahead past the buffer)."""
    *_, C, funcs = matmul.algorithm_fp16()
    matmul.gpu_schedule_tensor_core(funcs)
    stmt = lower(Environment.of([C]), CUDA, skip=("pipeline_tensor_calls",)).stmt
    loop = k_loops(stmt)[0]
    stmt = rewrite(stmt, lambda x: change(x) if x is loop else None)
    calls = [x for x in walk(k_loops(pipeline_tensor_calls(stmt, None))[0])
             if isinstance(x, n.TensorCall)]
    assert len(calls) == 1 and (calls[0].first is not None) == pipelined
