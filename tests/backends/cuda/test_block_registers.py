"""A Func computed at a GPU block loop in registers (`lower/block_registers.py`): each
thread keeps its own part, proven from the accesses, or a ScheduleError says why not;
and the barriers of such a kernel (`lower/fuse_gpu_thread_loops.py`). No GPU needed:
tests/gpu runs the schedules against halo.reference."""
import re
import shutil
import subprocess

import pytest

import halo
from apps import conv_relu, matmul
from halo.backends.cuda.cuda_c import PRELUDE
from halo.ir import nodes as n
from halo.ir.types import float32, int32
from halo.ir.visitor import walk
from halo.lang.environment import Environment
from halo.lower.block_registers import block_registers
from halo.lower.fuse_gpu_thread_loops import SYNC_THREADS
from halo.lower.pipeline import lower

CUDA = halo.Target("cuda", arch="sm_90")


def _matmul(**sizes):
    *_, C, funcs = matmul.algorithm()
    matmul.gpu_schedule(funcs, **sizes)
    return C, funcs


def test_the_accumulators_shrink_to_one_threads_part():
    C, _ = _matmul(tile=32, register_tile=4, depth=8)
    stmt = lower(Environment.of([C]), CUDA, stop_after="block_registers").stmt
    realizes = [r for r in walk(stmt) if isinstance(r, n.Realize) and r.name == "C_local"]
    assert realizes, "C_local is realized"
    for r in realizes:  # the whole-tile nest and the clamped one
        assert r.scope == "local"
        assert r.bounds == ((n.const(0), n.const(4)), (n.const(0), n.const(4)))
    source = C.compile(target=CUDA).function.kernels_source
    assert "float C_local[16];" in source
    # every access at a constant index, which keeps the array in registers
    assert not re.search(r"C_local\[[^\]]*[A-Za-z_]", source)


@pytest.mark.parametrize("stages, expected", [(1, 2), (2, 1)])
def test_a_k_step_waits_once_per_hazard_and_the_panel_copies_not_at_all(stages, expected):
    """Per step of k with panels copied at once: one barrier before the panels are
    overwritten (slower threads may still read the last step's), one before they are
    read. Double-buffered, the copies (`cp.async`) fill another step's slot: the one
    barrier, after each thread waited for its own copies of this step's slot, does
    both. None between the two copies or between the unrolled pieces of one."""
    C, _ = _matmul(tile=32, register_tile=4, depth=8, stages=stages)
    stmt = lower(Environment.of([C]), CUDA).stmt
    steps = [x for x in walk(stmt) if isinstance(x, n.For) and x.name.endswith(".ko")]
    assert steps
    for loop in steps:
        barriers = [x for x in walk(loop.body) if isinstance(x, n.Call)
                    and x.name == SYNC_THREADS]
        assert len(barriers) == expected, loop.name


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_accumulators_are_registers_in_ptx(tmp_path):
    C, _ = _matmul(tile=32, register_tile=4, depth=8)
    source = tmp_path / "k.cu"
    source.write_text(PRELUDE + C.compile(target=CUDA).function.kernels_source)
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", "-O3", str(source), "-o", str(ptx)],
                   check=True, capture_output=True)
    text = ptx.read_text()
    assert ".local" not in text, "C_local spilled to local memory"
    assert "fma.rn.f32" in text


def test_partials_of_an_rfactor_and_their_merge_are_registers():
    """conv_relu's small-batch schedule: each thread's partial sums (the rfactor
    intermediate's local cache) and the merged sums are registers, though the merged
    sums' boxes are defined beside the intermediate, outside their own storage; the
    partials meet in shared memory."""
    *_, relu, funcs = conv_relu.algorithm()
    conv_relu.gpu_schedule_small_batch(funcs, channels=16, columns=16, depth=8,
                                       registers=(2, 4), groups=4)
    source = relu.compile(target=CUDA).function.kernels_source
    assert "float conv_intm_local[8];" in source
    assert "float conv[8];" in source
    assert re.search(r"__shared__ .*float conv_intm\[", source)


def _refused(schedule, match):
    *_, C, funcs = matmul.algorithm()
    schedule(funcs)
    with pytest.raises(halo.ScheduleError, match=match):
        C.compile(target=CUDA)


def _threads(C, C_local, rows: int, local_rows: int, tail: str = "guard"):
    i, j = halo.vars("i j")
    io, jo, ii, ji, iv, jv, ty, tx = halo.vars("io jo ii ji iv jv ty tx")
    C.tile(i, j, io, jo, ii, ji, 32, 32).split(ii, ty, iv, rows).split(ji, tx, jv, 4)
    C.reorder(io, jo, ty, tx, iv, jv).gpu_blocks(io, jo).gpu_threads(ty, tx)
    C_local.compute_at(C, jo).split(i, ty, iv, local_rows, tail=tail)
    C_local.split(j, tx, jv, 4, tail=tail).reorder(ty, tx, iv, jv).gpu_threads(ty, tx)
    C_local.unroll(iv).unroll(jv)


def test_a_consumer_with_other_threads_is_refused():
    def schedule(funcs):
        C = funcs["C"]
        C_local = C.cache_write("local")
        _threads(C, C_local, rows=4, local_rows=2)
        C_local.update(0).split("i", "ty", "iv", 2).split("j", "tx", "jv", 4) \
            .reorder("ty", "tx", "iv", "jv").gpu_threads("ty", "tx")
    _refused(schedule, r"C_local.store_in\('local'\): C_local is computed at a GPU block "
                       r"loop, where registers hold it only if each thread reads and writes a "
                       r"part of its own; one access runs in threads \(x: 8, y: 8\) and "
                       r"another in threads \(x: 8, y: 16\)")


def test_a_shifted_tail_is_refused_with_the_guard_that_fixes_it():
    """Split inwards, a clamped tile's last threads compute rows their consumer's
    threads don't read."""
    def schedule(funcs):
        C = funcs["C"]
        C_local = C.cache_write("local")
        _threads(C, C_local, rows=4, local_rows=4, tail="shift_inwards")
        C_local.update(0).split("i", "ty", "iv", 4).split("j", "tx", "jv", 4) \
            .reorder("ty", "tx", "iv", "jv").gpu_threads("ty", "tx")
    _refused(schedule, r"a thread's part starts at .* tail='guard' where a split doesn't "
                       r"divide its extent")


def _block_of(step: int, size: int) -> n.Stmt:
    """A kernel whose threads each write, then read, `size` points of f from
    `step` * threadIdx.x on."""
    t, v = n.Var("f.s0.x.t", int32), n.Var("f.s0.x.v", int32)

    def nest(body):
        return n.For("f.s0.x.t", n.const(0), n.const(16), n.ForKind.GPU_THREAD,
                     n.For("f.s0.x.v", n.const(0), n.const(size), n.ForKind.UNROLLED, body))
    at = (n.Add(n.Mul(t, n.const(step)), v),)
    write = nest(n.Provide("f", n.const(1.0, float32), at))
    read = nest(n.Provide("g", n.Call(float32, "f", at, n.CallKind.FUNC), at))
    realize = n.Realize("f", float32, ((n.const(0), n.const(64)),), n.block(write, read),
                        "local")
    return n.For("g.s0.x.b", n.const(0), n.const(4), n.ForKind.GPU_BLOCK, realize)


def test_threads_whose_parts_overlap_are_refused():
    with pytest.raises(halo.ScheduleError, match=r"the parts of neighbouring threads along "
                                                 r"x overlap: along dimension 0 a part "
                                                 r"starts at thread.x \* 4 and holds 8"):
        block_registers(_block_of(step=4, size=8), None)
    kept = block_registers(_block_of(step=8, size=8), None)
    realize = next(x for x in walk(kept) if isinstance(x, n.Realize))
    assert realize.bounds == ((n.const(0), n.const(8)),)
