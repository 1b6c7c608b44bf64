"""Tensorize on the CUDA target, with no GPU: warp-scoped intrinsics get their lanes, the
CUDA emission interface (CudaContext), halo.intrinsics.mma_f16_f32's CUDA C compiling to
PTX with tensor-core instructions (nvcc -ptx -arch=sm_90, skipped without nvcc), shared
memory layout, accumulators in a warp array (lower/block_registers.py) and the checks
before running that the sizes it can't take need, and every refusal with its message.
Correctness on a GPU is in tests/gpu/test_app_schedules.py."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import halo
from apps import matmul
from halo import intrinsics
from halo.backends.cuda.cuda_c import PRELUDE
from halo.backends.cuda.tensor_calls import CudaContext, CudaOperand, CudaPipeline
from halo.ir import nodes as n
from halo.ir.visitor import walk

CUDA = halo.Target("cuda", arch="sm_90")
NVCC = shutil.which("nvcc")


def tensor_core_matmul(**sizes):
    """The fp16 matmul with its accumulators in shared memory."""
    A, B, C, funcs = matmul.algorithm_fp16()
    matmul.gpu_schedule_tensor_core_shared(funcs, **sizes)
    return C, funcs


def register_tensor_core_matmul(k_step=None, **sizes):
    """The fp16 matmul with its accumulators in the warps' registers (by default, warps
    of 64 x 32 and k steps of 64 in 3 stages)."""
    A, B, C, funcs = matmul.algorithm_fp16(k_step=k_step)
    matmul.gpu_schedule_tensor_core(funcs, **{"warp": (64, 32), "depth": 64, "stages": 3,
                                              **sizes})
    return C, funcs


def lowered(f: halo.Func) -> n.Stmt:
    return f.lower(CUDA).stmt


def source(f: halo.Func) -> str:
    return f.compile(target=CUDA).function.kernels_source


def test_warp_calls_run_inside_a_loop_of_32_lanes_innermost_of_the_thread_loops():
    C, _ = tensor_core_matmul()
    calls = [x for x in walk(lowered(C)) if isinstance(x, n.TensorCall)]
    assert {(c.part, c.intrinsic.scope) for c in calls} == {("init", "warp"), ("update", "warp")}
    lane_loops = [x for x in walk(lowered(C)) if isinstance(x, n.For)
                  and x.name.endswith(".warp_lane")]
    assert lane_loops and all(x.kind is n.ForKind.GPU_THREAD and x.extent == n.const(32)
                              for x in lane_loops)
    for lane in lane_loops:  # every call of a stage is inside its lanes
        inside = [x for x in walk(lane.body) if isinstance(x, n.TensorCall)]
        assert inside
    # The whole block: 32 lanes along x, the 2 x 2 warps along y and z.
    kernel = C.compile(target=CUDA).function.kernels[0]
    assert kernel.block == (32, 2, 2)


def test_what_the_warp_runs_besides_the_call_runs_on_lane_0():
    """The loops a tail guard keeps (for the tiles the call can't take) are guarded by
    lane == 0: one thread of the warp computes them, not 32 racing."""
    C, _ = tensor_core_matmul()
    stmt = lowered(C)
    guards = [x for x in walk(stmt) if isinstance(x, n.IfThenElse)
              and isinstance(x.condition, n.EQ)
              and isinstance(x.condition.a, n.Var) and x.condition.a.name.endswith("warp_lane")]
    assert guards
    for g in guards:
        assert not any(isinstance(x, n.TensorCall) for x in walk(g.then_case))
        assert any(isinstance(x, n.Store) for x in walk(g.then_case))


def test_the_cuda_c_holds_mma_instructions_and_warp_barriers():
    C, _ = tensor_core_matmul()
    text = source(C)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in text
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text
    assert "__syncwarp();" in text


def test_accumulators_a_warp_array_and_the_tails_it_cant_take_refused_before_running():
    """C_local, stored at the block loop and touched only by warp-scoped calls, becomes a
    warp array: one warp's 64 x 32 tile, 64 floats a lane; the copy of the nest for C
    smaller than a block and the loops for a k tail (which would touch it element by
    element) are gone, and the sizes they were for are checks before running."""
    C, _ = register_tensor_core_matmul()
    lowered = C.lower(CUDA)
    arrays = [x for x in walk(lowered.stmt) if isinstance(x, n.Allocate) and x.scope == "warp"]
    assert arrays and {(a.name, a.size) for a in arrays} == {("C_local", n.const(64 * 32))}
    for a in arrays:
        calls = [x for x in walk(a.body) if isinstance(x, n.TensorCall)]
        addresses = {id(y) for c in calls for o in c.operands for y in walk(o)}
        assert not any(isinstance(x, (n.Load, n.Store)) and x.name == "C_local"
                       and id(x) not in addresses for x in walk(a.body))
        assert {x.name for x in walk(a.body) if isinstance(x, n.TensorCall)} == {
            "mma_f16_f32_64x32x64", "mma_f32_store_64x32"}
    from halo.runtime.host_checks import compile_checks
    run = compile_checks(lowered.checks)
    sizes = {"A.extent.0": 300, "A.extent.1": 64, "B.extent.0": 64, "B.extent.1": 130,
             "C.min.0": 0, "C.min.1": 0, "C.extent.0": 300, "C.extent.1": 130}
    assert run(sizes) is None
    for bad in ({"A.extent.1": 45, "B.extent.0": 45}, {"C.extent.1": 127, "B.extent.1": 127}):
        failed = run({**sizes, **bad})
        assert failed is not None and failed[0].what == "whole tiles"
    text = source(C)
    assert re.search(r"\bfloat C_local\[64\];", text)


def test_a_kernel_past_48_kb_of_shared_memory_takes_it_at_launch():
    """3 stages of 128 x 64 and 64 x 128 panels (rows padded) are 105 KB: one dynamic
    shared array, the panels at aligned offsets in it, its size the launch's; 2 stages of
    steps of 32 fit in 48 KB, declared as arrays; past the architecture's most, refused."""
    C, _ = register_tensor_core_matmul()
    kernels = C.compile(target=CUDA).function.kernels
    assert {k.dynamic_shared for k in kernels} == {3 * (128 * 72 + 64 * 136) * 2}
    text = source(C)
    assert "extern __shared__ __align__(128) unsigned char halo_shared[];" in text
    assert "__half* const A_shared = (__half*)(halo_shared + 0);" in text
    assert f"__half* const B_shared = (__half*)(halo_shared + {3 * 128 * 72 * 2});" in text
    small, _ = register_tensor_core_matmul(depth=32, stages=2)
    assert {k.dynamic_shared for k in small.compile(target=CUDA).function.kernels} == {0}
    assert "__shared__ __align__(128) __half A_shared[" in source(small)
    big, _ = register_tensor_core_matmul(block=(256, 128), warp=(64, 64), stages=5)
    assert f"its GPU blocks would use {5 * (256 * 72 + 64 * 136) * 2} bytes" in message(
        lambda: big.compile(target=CUDA))
    assert "more than the 232448 a block may hold on this GPU" in message(
        lambda: big.compile(target=CUDA))


def test_a_warp_array_read_element_by_element_is_refused():
    C = _accumulated_by_warps("local", copy_threads=32)  # an element-by-element copy out
    text = message(lambda: C.lower(CUDA))
    assert "C_local.store_in('local'): C_local is computed at a GPU block loop and read or " \
           "written by warp-scoped tensor intrinsics, which keep it spread over a warp's " \
           "lanes (a warp array), and by code element by element too" in text
    assert "halo.intrinsics.mma_f32_store" in text


def test_shared_buffers_are_declared_once_per_kernel_and_rows_padded():
    """A_shared is allocated in two copies of the partitioned k loop; the kernel declares
    it once. Rows of 64 floats (256 bytes) are 68 apart, 32 halves (64 bytes) 40 apart."""
    C, _ = tensor_core_matmul(block=(64, 64), depth=32)
    for kernel in source(C).split("__global__")[1:]:
        names = re.findall(r"__shared__ __align__\(128\) \w+ (\w+)\[(\d+)\]", kernel)
        assert sorted(names) == [("A_shared", str(64 * 40)), ("B_shared", str(32 * 72)),
                                 ("C_shared", str(64 * 68))]
    strides = {op.name: s for x in walk(lowered(C)) if isinstance(x, n.TensorCall)
               for op, s in zip(x.operands, x.strides, strict=True)}
    assert strides["C_shared"] == (n.const(68), n.const(1))
    assert strides["A_shared"] == (n.const(40), n.const(1))
    assert strides["B_shared"] == (n.const(72), n.const(1))


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("sizes", [{}, {"block": (64, 128), "depth": 32}, {"depth": 32}],
                         ids=["64x64x64", "64x128x32", "64x64x32"])
def test_the_tensor_core_matmul_compiles_to_ptx_with_mma_instructions(tmp_path, sizes):
    C, _ = tensor_core_matmul(**sizes)
    ptx = _ptx(tmp_path, C)
    # 2 x 4 m16n8k16 a warp's 32 x 32 tile per 16 of the call's depth, in each of the
    # kernels the block loops were partitioned into
    per_call = 2 * 4 * sizes.get("depth", 64) // 16
    count = ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    assert count and count % per_call == 0, count
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("sizes", [{}, {"warp": (64, 64), "depth": 32},
                                   {"depth": 16, "stages": 3}],
                         ids=["128x128-64x32-k64", "warps64x64-k32", "k16-3stages"])
def test_the_register_tensor_core_matmul_keeps_its_accumulators_in_registers(tmp_path, sizes):
    """No local memory in the PTX: the warp array's indices are constants, so its 64 (or
    128) floats a lane are registers; the panels are copied with cp.async."""
    C, _ = register_tensor_core_matmul(**sizes)
    ptx = _ptx(tmp_path, C)
    assert ".local" not in ptx
    assert "cp.async.cg.shared.global" in ptx
    warp = sizes.get("warp", (64, 32))
    per_call = (warp[0] // 16) * (warp[1] // 8) * sizes.get("depth", 64) // 16
    count = ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    assert count and count % per_call == 0, count


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("accumulators", ["registers", "shared"])
def test_a_float16_output_is_rounded_from_the_float32_sums(tmp_path, accumulators):
    """`algorithm_fp16(out=halo.float16)`: the sums stay float32 ("acc", in the warps'
    registers or in shared memory) and are rounded to nearest even once, on the way out:
    two at a time (`__floats2half2_rn`) by the copy-out intrinsic, or one at a time by
    the block's threads."""
    A, B, C, funcs = matmul.algorithm_fp16(out=halo.float16)
    if accumulators == "registers":
        matmul.gpu_schedule_tensor_core(funcs, warp=(64, 32))
        assert ".tensorize(ti, mma_f32_store_64x32_f16)" in halo.schedule_source(C)
    else:
        matmul.gpu_schedule_tensor_core_shared(funcs)
    assert C.type == halo.float16 and funcs["acc"].type == halo.float32
    ptx = _ptx(tmp_path, C)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    rounded = "cvt.rn.f16x2.f32" if accumulators == "registers" else "cvt.rn.f16.f32"
    assert rounded in ptx
    assert "st.global.f32" not in ptx and "st.global.v2.f32" not in ptx


def test_the_copy_out_takes_float32_or_float16_only():
    assert message(lambda: intrinsics.mma_f32_store(32, 32, out=halo.int32),
                   halo.DefinitionError) == (
        "halo.intrinsics.mma_f32_store(32, 32): out must be halo.float32 or halo.float16, "
        "not int32")


def _ptx(tmp_path, f: halo.Func) -> str:
    """`f`'s CUDA C compiled to PTX for sm_90."""
    path = tmp_path / "tc.cu"
    path.write_text(PRELUDE + source(f))
    result = subprocess.run([NVCC, "-ptx", "-arch=sm_90", str(path), "-o",
                             str(tmp_path / "tc.ptx")], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    return (tmp_path / "tc.ptx").read_text()


# ------------------------------------------------------------------ the interface


def test_a_user_declared_warp_intrinsic_gets_a_cuda_context():
    """An Intrinsic of one's own with a CUDA emitter: operand pointers and strides as C
    expressions, its lines in a block of their own between warp barriers, its headers."""
    seen = {}
    i, j = halo.vars("i j")
    src = halo.ImageParam(halo.float32, 2, "copy_src")
    spec = halo.Func("copy_spec")
    spec[i, j] = src[i, j]
    spec.bound(i, 0, 4).bound(j, 0, 8)

    def emit(ctx: CudaContext) -> None:
        seen["ctx"] = ctx
        out, inp = ctx.operand("copy_spec"), ctx.operand("copy_src")
        ctx.include("cuda_pipeline.h")
        e = ctx.fresh("e")
        ctx.line(f"for (int {e} = {ctx.lane}; {e} < 32; {e} += 32)")
        ctx.line(f"    {ctx.address(out, f'{e} / 8', f'{e} % 8')}[0] = "
                 f"{ctx.address(inp, f'{e} / 8', f'{e} % 8')}[0];")
    copy = halo.Intrinsic("warp_copy", spec, emit=emit, scope="warp")

    out = _copy_tensorized((4, 8), copy)
    text = source(out)
    ctx = seen["ctx"]
    assert ctx.backend == "cuda" and ctx.part == "emit" and ctx.arch == "sm_90"
    operand = ctx.operand("copy_src")
    assert operand.scope == "global" and operand.c_type == "float"
    assert operand.constant_strides == (None, 1)
    assert "#include <cuda_pipeline.h>" in text
    assert re.search(r"__syncwarp\(\);\n\s*for \(int e_t\d+ = \(\(int\)threadIdx.x & 31\)",
                     text), text
    with pytest.raises(halo.ScheduleError, match=r"asked for operand 'nope'; its spec's "
                                                 r"buffers are copy_spec, copy_src"):
        ctx.operand("nope")


def test_cuda_context_addresses():
    op = CudaOperand("a", "A_sh", halo.float16, "__half", "shared", "(A_sh + 5)",
                     ("40", "1"), (40, 1))
    runtime = CudaOperand("b", "B", halo.float16, "__half", "global", "(B + i)",
                          ("B_stride_0", "1"), (None, 1))
    ctx = CudaContext("k", "update", [op, runtime], "sm_90", "0", lambda b: b)
    assert ctx.address(op) == "(A_sh + 5)"
    assert ctx.address(op, 0, 0) == "(A_sh + 5)"
    assert ctx.address(op, 2, 3) == "((A_sh + 5) + 80 + 3)"
    assert ctx.address(op, "k") == "((A_sh + 5) + (k) * (40))"
    assert ctx.address(runtime, 16) == "((B + i) + (16) * (B_stride_0))"
    with pytest.raises(halo.ScheduleError, match="addressed a with 3 coordinates; it has 2"):
        ctx.address(op, 1, 2, 3)


@pytest.mark.parametrize(("scope", "alignment", "stride", "expect"), [
    ("shared", 16, 40, "ldmatrix"), ("shared", 2, 40, "test"), ("shared", 16, None, "test"),
    ("shared", 16, 36, "elements"), ("global", 16, 40, "elements")])
def test_mma_reads_fragments_by_ldmatrix_where_lowering_proved_it_may(scope, alignment,
                                                                      stride, expect):
    """`ldmatrix` where the operands are in shared memory, 16-byte aligned and rows a
    multiple of 16 bytes apart; a run-time test picks between it and element-by-element
    loads only where lowering couldn't prove it; never (rows 72 bytes apart, or global
    memory) leaves only the element-by-element loads."""
    mma = intrinsics.mma_f16_f32(16, 16, 16)

    def operand(name, t, stride, alignment, scope=scope):
        return CudaOperand(name, name.upper(), t, "x", scope, f"({name.upper()} + o)",
                           (str(stride or "s"), "1"), (stride, 1), alignment=alignment)
    ctx = CudaContext("k", "update", [
        operand(f"{mma.name}_spec", halo.float32, 20, 16, "shared"),
        operand(f"{mma.name}_a", halo.float16, stride, alignment),
        operand(f"{mma.name}_b", halo.float16, 40, 16)], "sm_90", "lane", lambda b: b)
    mma.emitter("update")(ctx)
    text = "\n".join(ctx.lines)
    assert ("ldmatrix" in text) == (expect in ("ldmatrix", "test")), text
    assert ("__half_as_ushort" in text) == (expect in ("elements", "test")), text
    assert ("& 15) == 0" in text or "% 8 == 0" in text) == (expect == "test"), text


# ------------------------------------------------- pipelined with the k loop


def pipelined_context(mma, parts=3, alignment=16):
    """A CudaContext for `mma`'s update pipelined with its loop: operands in shared
    memory (the next iteration's one slot on), the overlap in `parts` parts."""
    def operand(name, t, pointer, stride):
        return CudaOperand(name, name.upper(), t, "x", "shared", pointer, (str(stride), "1"),
                           (stride, 1), alignment=alignment)
    now = [operand(f"{mma.name}_spec", halo.float32, "(ACC + 0)", 64),
           operand(f"{mma.name}_a", halo.float16, "(A + slot)", 72),
           operand(f"{mma.name}_b", halo.float16, "(B + slot)", 136)]
    ahead = [op if op.name.endswith("spec") else
             CudaOperand(op.name, op.buffer, op.type, op.c_type, op.scope,
                         op.pointer.replace("slot", "next_slot"), op.strides,
                         op.constant_strides, alignment=alignment) for op in now]
    pipeline = CudaPipeline("ko == 0", ahead, [[f"part{p};"] for p in range(parts)],
                            ["wait;", "barrier;"], [])
    return CudaContext("k", "update", now, "sm_90", "lane", lambda b: b, pipeline), pipeline


def test_mma_pipelined_with_its_loop_loads_the_next_steps_first_fragments_after_the_handoff():
    mma = intrinsics.mma_f16_f32(32, 32, 64)  # 4 steps of 16
    ctx, pipeline = pipelined_context(mma)
    mma.emitter("update")(ctx)
    text = "\n".join(ctx.body())
    # the fragment registers live across iterations: declared before the loop
    assert len(pipeline.carried) == 1 and pipeline.carried[0].startswith("unsigned a")
    assert "unsigned a" not in text
    # the first iteration loads its own first step; later ones were loaded ahead
    first, steps = text.split("#pragma unroll")
    assert "(A + slot)" in first.split("if (ko == 0) {")[1]
    # the copies spread over the steps before the last, in order; then the handoff, and
    # only after it the next slots' first fragments
    at = [re.search(rf"if \(k == {16 * p}\) {{\s*part{p};", text).start() for p in range(3)]
    assert at == sorted(at)
    assert re.search(r"} else {\s*wait;\s*barrier;", steps), steps
    assert "next_slot" not in text.split("barrier;")[0]
    assert "next_slot" in text.split("barrier;")[1]
    assert text.count("part") == 3 and text.count("barrier;") == 1


@pytest.mark.parametrize(("depth", "alignment"), [(16, 16), (32, 16), (48, 16), (64, 2)])
def test_mma_of_fewer_or_an_odd_number_of_steps_leaves_its_loop_as_it_was(depth, alignment):
    """2 steps measured slower pipelined, an odd number would load the next call's
    first fragments into the set the last step reads, and where `ldmatrix` is chosen
    when it runs, each warp in a branch of its own, the barrier can't be in a branch: the
    CUDA backend puts the overlap before the call's code and the handoff after it, the
    loop's order with the barrier moved to the end of the iteration before."""
    mma = intrinsics.mma_f16_f32(32, 32, depth)
    ctx, pipeline = pipelined_context(mma, parts=2, alignment=alignment)
    mma.emitter("update")(ctx)
    body = ctx.body()
    assert body[:2] == ["part0;", "part1;"] and body[-2:] == ["wait;", "barrier;"]
    assert not pipeline.carried and "next_slot" not in "\n".join(body)


def test_a_pipelined_context_refuses_what_it_cant_do():
    mma = intrinsics.mma_f16_f32(32, 32, 64)
    ctx, _ = pipelined_context(mma, parts=2)
    ctx.overlap(0)
    ctx.handoff()
    with pytest.raises(halo.ScheduleError, match=r"placed only \['0', 'handoff'\] of the "
                                                 r"overlap parts 0-1 and the handoff"):
        ctx.body()
    a = CudaOperand("a", "A", halo.float16, "__half", "shared", "A", ("8", "1"), (8, 1))
    plain = CudaContext("k", "update", [a], "sm_90", "lane", lambda b: b)
    for use in (lambda: plain.first, lambda: plain.handoff(), lambda: plain.carry("int x;"),
                lambda: plain.operand("a", ahead=True), lambda: plain.overlap(0)):
        with pytest.raises(halo.ScheduleError, match="not pipelined with a loop"):
            use()


# -------------------------------------------------------------------- refusals


def message(fn, error=halo.ScheduleError) -> str:
    with pytest.raises(error) as info:
        fn()
    return str(info.value)


def test_a_warp_intrinsic_on_the_host_is_refused():
    C, k = _fp16_algorithm()
    i, j = C.args
    io, jo, ii, ji = halo.vars("io jo ii ji")
    C.tile(i, j, io, jo, ii, ji, 32, 32).tensorize(ii, intrinsics.mma_f16_f32(32, 32, 32))
    assert message(lambda: C.lower("host")) == (
        "C.tensorize(ii, mma_f16_f32_32x32x32): mma_f16_f32_32x32x32 runs on a GPU warp "
        "(scope 'warp'); compile for target 'cuda', or tensorize with an intrinsic for this "
        "target")


def _copy_tensorized(tile: tuple[int, int], intrinsic) -> halo.Func:
    """A copy of a float32 image, one GPU block a tile, each tile one call of
    `intrinsic`."""
    x, y = halo.vars("x y")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    out = halo.Func("out")
    out[y, x] = inp[y, x]
    yo, xo, yi, xi = halo.vars("yo xo yi xi")
    out.tile(y, x, yo, xo, yi, xi, *tile).gpu_blocks(yo, xo).tensorize(yi, intrinsic)
    return out


def _fp16_algorithm(value=None):
    """The fp16 matmul (C, k), or with `value(a, b)` as its product."""
    _, _, C, funcs = matmul.algorithm_fp16(value)
    return C, funcs["k"]


def _schedule(C, k, warp=(32, 32), split=32):
    i, j = C.args
    io, jo, ii, ji, ko, ki = halo.vars("io jo ii ji ko ki")
    mma = intrinsics.mma_f16_f32(32, 32, 32)
    C.tile(i, j, io, jo, ii, ji, *warp).gpu_blocks(io, jo).tensorize(ii, mma)
    C.update(0).tile(i, j, io, jo, ii, ji, *warp).split(k, ko, ki, split) \
        .reorder(io, jo, ko, ii, ji, ki).gpu_blocks(io, jo).tensorize(ii, mma)


def test_a_nest_that_multiplies_other_types_is_refused_with_the_first_difference():
    """float16 products summed into float32 aren't what the tensor cores compute
    (float32 products of float16 inputs)."""
    C, k = _fp16_algorithm(lambda a, b: halo.cast(halo.float32, a * b))
    _schedule(C, k)
    text = message(lambda: C.lower(CUDA))
    assert text.startswith("C.update(0).tensorize(ii, mma_f16_f32_32x32x32): the loops from ii "
                           "inward don't compute what mma_f16_f32_32x32x32's spec "
                           "mma_f16_f32_32x32x32_spec computes: expected float32(")
    assert "loop extents: ii 32 (spec i 32), ji 32 (spec j 32), ki 32 (spec k.x 32)" in text


def test_a_tile_of_the_wrong_depth_is_refused():
    C, k = _fp16_algorithm()
    _schedule(C, k, split=16)
    assert message(lambda: C.lower(CUDA)) == (
        "C.update(0).tensorize(ii, mma_f16_f32_32x32x32): loop ki has extent 16, but the "
        "spec's loop k.x has extent 32; split ki by 32 (a tail is guarded or shifted by the "
        "split's tail strategy)")


def test_a_warp_call_with_three_thread_loops_around_it_is_refused():
    C, k = _fp16_algorithm()
    i, j = C.args
    io, jo, ii, ji, a, b, c, d, e, ko, ki = halo.vars("io jo ii ji a b c d e ko ki")
    mma = intrinsics.mma_f16_f32(32, 32, 32)
    C.tile(i, j, io, jo, ii, ji, 32, 32).gpu_blocks(io, jo).tensorize(ii, mma)
    u = C.update(0)
    u.split(i, a, ii, 32).split(a, a, b, 2).split(a, a, e, 2)
    u.split(j, c, ji, 32).split(c, c, d, 2).split(k, ko, ki, 32)
    u.reorder(a, c, e, b, d, ko, ii, ji, ki).gpu_blocks(a, c).gpu_threads(e, b, d)
    u.tensorize(ii, mma)
    assert message(lambda: C.lower(CUDA)) == (
        "C.update(0): it binds 3 loops to GPU threads around the warp-scoped "
        "mma_f16_f32_32x32x32, whose 32 lanes need one of CUDA's three thread axes; bind at "
        "most 2 loops (each thread of the schedule is a warp)")


def test_a_func_computed_inside_the_warp_loops_is_refused():
    """Registers of a Func computed inside a warp's thread loops would be one copy per
    lane; halo refuses and says where it could go."""
    A, _, C, funcs = matmul.algorithm_fp16()
    k = funcs["k"]
    i, j = C.args
    io, jo, ii, ji, ko, ki, bo, wi = halo.vars("io jo ii ji ko ki bo wi")
    mma = intrinsics.mma_f16_f32(32, 32, 32)
    C.tile(i, j, io, jo, ii, ji, 32, 32).gpu_blocks(io, jo).tensorize(ii, mma)
    u = C.update(0)
    u.tile(i, j, io, jo, ii, ji, 32, 32).split(io, bo, wi, 2).split(k, ko, ki, 32)
    u.reorder(bo, jo, wi, ko, ii, ji, ki).gpu_blocks(bo, jo).gpu_threads(wi)
    u.tensorize(ii, mma)
    A.cache_read("local", [C]).compute_at(u, ko)
    assert message(lambda: C.lower(CUDA)) == (
        "A_local is computed inside the thread loops around the warp-scoped "
        "mma_f16_f32_32x32x32, where each of a warp's 32 threads would hold a copy; compute "
        "A_local at a GPU block loop (shared memory, compute_at(consumer, block var)) or "
        "outside the kernel")


def test_a_block_whose_width_is_not_a_multiple_of_32_is_refused():
    """The copy-out of the kernel binds 48 threads along x: warps would straddle rows."""
    C = _accumulated_by_warps("shared", copy_threads=48)
    assert "mma_f16_f32_32x32x32 runs on whole warps, but this kernel's blocks are 48 " \
           "threads wide along x, which is not a multiple of 32" in \
        message(lambda: C.compile(target=CUDA))


def _accumulated_by_warps(scope: str, copy_threads: int) -> halo.Func:
    """The fp16 matmul's 64 x 64 blocks accumulated in `scope` (cache_write) by 2 x 2
    warps of 32 x 32 tiles, k steps of 32, copied out element by element by
    `copy_threads` threads along x."""
    C, k = _fp16_algorithm()
    i, j = C.args
    io, jo, ii, ji, ko, ki, r, tx, wi, wj, ti, tj = halo.vars(
        "io jo ii ji ko ki r tx wi wj ti tj")
    mma = intrinsics.mma_f16_f32(32, 32, 32)
    acc = C.cache_write(scope)
    C.tile(i, j, io, jo, ii, ji, 64, 64).gpu_blocks(io, jo).split(ji, r, tx, copy_threads)
    C.gpu_threads(tx)
    acc.compute_at(C, jo).tile(i, j, wi, wj, ti, tj, 32, 32).gpu_threads(wi, wj)
    acc.tensorize(ti, mma)
    acc.update(0).split(k, ko, ki, 32).tile(i, j, wi, wj, ti, tj, 32, 32) \
        .reorder(ko, wi, wj, ti, tj, ki).gpu_threads(wi, wj).tensorize(ti, mma)
    return C


def test_mma_f16_f32_shapes_and_scope_are_checked():
    assert message(lambda: intrinsics.mma_f16_f32(24, 32, 32), halo.DefinitionError) == (
        "halo.intrinsics.mma_f16_f32(24, 32, 32): rows must be a multiple of 16, the side "
        "of a tensor-core tile")
    assert message(lambda: intrinsics.mma_f32_store(32, 12), halo.DefinitionError) == (
        "halo.intrinsics.mma_f32_store(32, 12): rows must be a multiple of 16 and columns "
        "of 8, a tensor-core accumulator tile")
    i = halo.Var("i")
    spec = halo.Func("scoped_spec")
    spec[i] = 0
    spec.bound(i, 0, 4)
    assert message(lambda: halo.Intrinsic("scoped", spec, emit=print, scope="block"),
                   halo.DefinitionError) == (
        "Intrinsic scoped: scope must be one of 'thread', 'warp', not 'block'")


def test_a_host_intrinsic_on_the_cuda_target_fails_clearly():
    """A thread-scoped intrinsic whose emitter knows only LLVM: the CUDA backend says
    which emitter failed where."""
    i, j = halo.vars("i j")
    src = halo.ImageParam(halo.float32, 2, "h_src")
    spec = halo.Func("h_spec")
    spec[i, j] = src[i, j]
    spec.bound(i, 0, 2).bound(j, 0, 2)

    def emit(ctx):
        ctx.builder.load(ctx.operand("h_src").pointer)
    host_only = halo.Intrinsic("host_only", spec, emit=emit)
    out = _copy_tensorized((2, 2), host_only)
    assert "intrinsic host_only: its emitter for the emit part failed on the CUDA backend: " \
           "AttributeError(" in message(lambda: out.compile(target=CUDA))


def test_the_tensor_core_schedules_print_as_halo_source():
    C, _ = tensor_core_matmul()
    assert halo.schedule_source(C).count(".tensorize(ti, mma_f16_f32_32x32x64)") == 2
    C, _ = register_tensor_core_matmul()
    text = halo.schedule_source(C)
    assert text.count(".tensorize(ti, mma_f16_f32_64x32x64)") == 2
    assert text.count(".tensorize(ti, mma_f32_store_64x32)") == 1


def test_a_host_intrinsic_of_halo_refuses_the_cuda_backend():
    try:
        micro = intrinsics.fma_outer_product(2, 16, 4)
    except halo.DefinitionError:
        pytest.skip("this host has no FMA micro-kernel")
    x, y = halo.Var("x"), halo.Var("y")
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    out = halo.Func("out")
    out[y, x] = 0.0
    out[y, x] += A[y, k] * B[k, x]
    yo, xo, yi, xi, ko, ki = halo.vars("yo xo yi xi ko ki")
    out.gpu_tile(y, x, yo, xo, yi, xi, 2, 16)
    out.update(0).tile(y, x, yo, xo, yi, xi, 2, 16).split(k, ko, ki, 4) \
        .reorder(yo, xo, ko, yi, xi, ki).gpu_blocks(yo, xo).tensorize(yi, micro)
    assert message(lambda: out.compile(target=CUDA)) == (
        "halo.intrinsics.fma_outer_product(2, 16, 4): a host intrinsic emits LLVM IR only; "
        "it was asked for the cuda backend (on a GPU, use mma_f16_f32)")


def test_tensor_cores_before_sm_80_are_refused():
    C, _ = tensor_core_matmul()
    assert "halo.intrinsics.mma_f16_f32(32, 32, 64): mma.sync.m16n8k16 needs sm_80 or " \
           "later; the target is sm_75" in message(
               lambda: C.compile(target=halo.Target("cuda", arch="sm_75")))
