"""halo's tensor intrinsics, for `stage.tensorize(v, intrinsic)`: the host CPU's, and
the tensor cores of NVIDIA GPUs (target "cuda").

Each factory returns a `halo.Intrinsic` for a tile shape. The host's are made only where
the host has the instructions (`halo.target.host_cpu().features`); elsewhere they raise a
`DefinitionError` that says what the host lacks and what it could use instead.

* `dot_u8i8(rows, columns, groups, isa=None)`: an int8 matrix-multiply micro-kernel on the
  dot-product instruction `vpdpbusd` (uint8 x int8, four products summed into each
  int32), AVX-512 VNNI (`isa="avx512vnni"`, 16 columns a register) or AVX-VNNI
  (`isa="avxvnni"`, 8); its spec, with `k` over 4 consecutive bytes and `q` over `groups`
  of them:
      spec[i, j] = 0
      spec[i, j] += int32(a[i, 4 * q + k]) * int32(b[q, j, k])
  The weights `b` are packed in groups of 4 consecutive k (`b[q, j, k] = w[4q + k, j]`),
  as the instruction wants them; `b`'s rows of 4 bytes are read with one load when they
  are contiguous (stride 4 along j), else one by one.
* `fma_outer_product(rows, columns, depth)`: the portable float32 micro-kernel, a
  `rows x columns` tile of accumulators in registers updated by fused multiply-adds
  (`llvm.fma`, which every LLVM target lowers; separate multiplies and adds under
  `Target(strict_float=True)`), one outer product per step of k:
      spec[i, j] = 0.0
      spec[i, j] += a[i, k] * b[k, j]

Both accumulate in registers across their whole reduction and load and store the output
tile once per call.
* `mma_f16_f32(rows, columns, depth)`: a GPU warp's tensor-core multiply-accumulate
  (`mma.sync`, float16 x float16 summed into float32; docs/gpu.md, "Tensor cores"):
      spec[i, j] = 0.0
      spec[i, j] += float32(a[i, k]) * float32(b[k, j])
  and `mma_f32_store(rows, columns, out=float32)`, the copy `spec[i, j] = acc[i, j]` of
  its accumulators out of the warp's registers (`float16(acc[i, j])` with
  `out=halo.float16`).
bf16 (`vdpbf16ps` on the host, bf16 tensor cores) is not here: halo has no bfloat16 type,
so no spec can say what it computes. Each emitter refuses a backend it doesn't write.
"""
from __future__ import annotations

from llvmlite import ir

from halo.errors import DefinitionError, ScheduleError
from halo.ir.types import Type, float16, float32, int8, int32, uint8
from halo.lang.expr import cast
from halo.lang.func import Func
from halo.lang.inputs import ImageParam
from halo.lang.intrinsic import Intrinsic
from halo.lang.rdom import RDom
from halo.lang.var import Var
from halo.target import host_cpu

_VNNI = {"avx512vnni": (16, "llvm.x86.avx512.vpdpbusd.512"),
         "avxvnni": (8, "llvm.x86.avx512.vpdpbusd.256")}


def _require(call: str, feature: str, instead: str) -> None:
    cpu = host_cpu()
    if feature not in cpu.features:
        raise DefinitionError(f"{call}: this host ({cpu.name}) has no {feature}; {instead}")


def _require_llvm(ctx, call: str) -> None:
    if ctx.backend != "llvm":
        raise ScheduleError(f"{call}: a host intrinsic emits LLVM IR only; it was asked for "
                            f"the {ctx.backend} backend (on a GPU, use mma_f16_f32)")


def _positive(call: str, **sizes: int) -> None:
    for what, size in sizes.items():
        if not isinstance(size, int) or size < 1:
            raise DefinitionError(f"{call}: {what} must be a positive int, not {size!r}")


def dot_u8i8(rows: int, columns: int, groups: int, isa: str | None = None) -> Intrinsic:
    """The int8 micro-kernel `spec[i, j] += int32(a[i, 4q + k]) * int32(b[q, j, k])` for
    a `rows x columns` tile over `groups` groups of 4 bytes of k, on `vpdpbusd`. `isa`:
    "avx512vnni", "avxvnni", or None for the widest the host has."""
    call = f"halo.intrinsics.dot_u8i8({rows}, {columns}, {groups}, isa={isa!r})"
    _positive(call, rows=rows, columns=columns, groups=groups)
    features = host_cpu().features
    if isa is None:
        isa = next((x for x in _VNNI if x in features), None)
        if isa is None:
            raise DefinitionError(f"{call}: this host ({host_cpu().name}) has neither "
                                  "avx512vnni nor avxvnni; use fma_outer_product on float32 "
                                  "instead")
    if isa not in _VNNI:
        raise DefinitionError(f"{call}: isa must be one of {', '.join(_VNNI)} or None")
    _require(call, isa, "use isa=None to take what the host has, or fma_outer_product")
    lanes, instruction = _VNNI[isa]
    if columns % lanes:
        raise DefinitionError(f"{call}: columns must be a multiple of {lanes}, the int32 "
                              f"lanes of a register for {isa}")
    name = f"dot_u8i8_{isa}_{rows}x{columns}x{4 * groups}"
    i, j = Var("i"), Var("j")
    a = ImageParam(uint8, 2, f"{name}_a")
    b = ImageParam(int8, 3, f"{name}_b")
    r = RDom((0, groups), (0, 4), name="g")
    spec = Func(f"{name}_spec")
    spec[i, j] = 0
    spec[i, j] += cast(int32, a[i, 4 * r.x + r.y]) * cast(int32, b[r.x, j, r.y])
    spec.bound(i, 0, rows).bound(j, 0, columns)
    vector = ir.VectorType(ir.IntType(32), lanes)

    def init(ctx) -> None:
        _require_llvm(ctx, call)
        out = ctx.operand(spec.name)
        for row in range(rows):
            for col in range(0, columns, lanes):
                ctx.store(out, ir.Constant(vector, None), row, col)

    def update(ctx) -> None:
        _require_llvm(ctx, call)
        out, a_op, b_op = (ctx.operand(x) for x in (spec.name, a.name, b.name))
        cols = range(0, columns, lanes)
        acc = {(row, c): ctx.load(out, row, c, lanes=lanes) for row in range(rows) for c in cols}

        def step(q: ir.Value, acc: dict) -> dict:
            acc = dict(acc)
            weights = {c: _packed_row(ctx, b_op, q, c, lanes) for c in cols}
            k = ctx.builder.mul(q, ir.Constant(q.type, 4))
            for row in range(rows):
                word = ctx.builder.load(ctx.address(a_op, row, k), typ=ir.IntType(32),
                                        align=1)
                activations = _broadcast(ctx.builder, word, lanes)
                for c in cols:
                    acc[row, c] = ctx.call(instruction, vector,
                                           [acc[row, c], activations, weights[c]])
            return acc

        for (row, c), value in _loop(ctx.builder, groups, acc, step).items():
            ctx.store(out, value, row, c)

    return Intrinsic(name, spec, emit=update, init=init, update=update)


def _loop(builder: ir.IRBuilder, count: int, values: dict, step) -> dict:
    """`values` after `count` steps of `step(i, values)` (i an i64 from 0), as an LLVM
    loop that carries them in registers (phis): a few instructions per step to compile,
    however long the reduction; LLVM unrolls it as it sees fit."""
    index = ir.IntType(64)
    before = builder.block
    body = builder.append_basic_block("tensor_loop")
    after = builder.append_basic_block("tensor_loop_end")
    builder.branch(body)
    builder.position_at_end(body)
    i = builder.phi(index)
    i.add_incoming(ir.Constant(index, 0), before)
    phis = {key: builder.phi(v.type) for key, v in values.items()}
    for key, phi in phis.items():
        phi.add_incoming(values[key], before)
    stepped = step(i, phis)
    following = builder.add(i, ir.Constant(index, 1))
    end = builder.block
    i.add_incoming(following, end)
    for key, phi in phis.items():
        phi.add_incoming(stepped[key], end)
    builder.cbranch(builder.icmp_signed("<", following, ir.Constant(index, count)), body, after)
    builder.position_at_end(after)
    return stepped


def _packed_row(ctx, b, q: ir.Value, column: int, lanes: int) -> ir.Value:
    """b[q, column:column + lanes, 0:4] as `lanes` int32 words (4 bytes each)."""
    vector = ir.VectorType(ir.IntType(32), lanes)
    builder = ctx.builder
    if b.constant_strides[1] == 4:
        return builder.load(ctx.address(b, q, column), typ=vector, align=1)
    value = ir.Constant(vector, None)
    for lane in range(lanes):
        word = builder.load(ctx.address(b, q, column + lane), typ=ir.IntType(32), align=1)
        value = builder.insert_element(value, word, ir.Constant(ir.IntType(32), lane))
    return value


def _broadcast(builder: ir.IRBuilder, scalar: ir.Value, lanes: int) -> ir.Value:
    one = builder.insert_element(ir.Constant(ir.VectorType(scalar.type, lanes), None), scalar,
                                 ir.Constant(ir.IntType(32), 0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
    return builder.shuffle_vector(one, one, zeros)


def _matmul_spec(name: str, operands, rows: int, columns: int, depth: int):
    """(spec, a, b): `spec[i, j] = sum_k float32(a[i, k]) * float32(b[k, j])` over a
    `rows x columns` tile and `depth` steps of k, `a` and `b` of type `operands` (the cast
    is no cast for float32)."""
    i, j = Var("i"), Var("j")
    a = ImageParam(operands, 2, f"{name}_a")
    b = ImageParam(operands, 2, f"{name}_b")
    k = RDom((0, depth), name="k")
    spec = Func(f"{name}_spec")
    spec[i, j] = cast(float32, 0.0)
    spec[i, j] += cast(float32, a[i, k]) * cast(float32, b[k, j])
    spec.bound(i, 0, rows).bound(j, 0, columns)
    return spec, a, b


def fma_outer_product(rows: int, columns: int, depth: int) -> Intrinsic:
    """The float32 micro-kernel `spec[i, j] += a[i, k] * b[k, j]` for a `rows x columns`
    tile over `depth` steps of k, on fused multiply-adds; `columns` a multiple of the
    host's float32 lanes (16 with AVX-512, 8 with AVX, 4 otherwise)."""
    call = f"halo.intrinsics.fma_outer_product({rows}, {columns}, {depth})"
    _positive(call, rows=rows, columns=columns, depth=depth)
    cpu = host_cpu()
    if cpu.features.isdisjoint({"fma", "neon", "fp-armv8"}):
        raise DefinitionError(f"{call}: this host ({cpu.name}) has no fused multiply-add "
                              "instructions (fma); leave the loops to halo's vectorizer")
    lanes = cpu.vector_bytes // 4
    if columns % lanes:
        raise DefinitionError(f"{call}: columns must be a multiple of {lanes}, the float32 "
                              "lanes of this host's registers")
    name = f"fma_outer_{rows}x{columns}x{depth}"
    spec, a, b = _matmul_spec(name, float32, rows, columns, depth)
    vector = ir.VectorType(ir.FloatType(), lanes)
    fma = f"llvm.fma.v{lanes}f32"

    def init(ctx) -> None:
        _require_llvm(ctx, call)
        out = ctx.operand(spec.name)
        for row in range(rows):
            for col in range(0, columns, lanes):
                ctx.store(out, ir.Constant(vector, [0.0] * lanes), row, col)

    def update(ctx) -> None:
        _require_llvm(ctx, call)
        out, a_op, b_op = (ctx.operand(x) for x in (spec.name, a.name, b.name))
        cols = range(0, columns, lanes)
        acc = {(row, c): ctx.load(out, row, c, lanes=lanes) for row in range(rows) for c in cols}
        for step in range(depth):
            right = {c: ctx.load(b_op, step, c, lanes=lanes) for c in cols}
            for row in range(rows):
                left = _broadcast(ctx.builder, ctx.load(a_op, row, step), lanes)
                for c in cols:
                    if ctx.strict_float:  # each product rounded, then each sum
                        product = ctx.builder.fmul(left, right[c])
                        acc[row, c] = ctx.builder.fadd(acc[row, c], product)
                    else:
                        acc[row, c] = ctx.call(fma, vector, [left, right[c], acc[row, c]])
        for (row, c), value in acc.items():
            ctx.store(out, value, row, c)

    return Intrinsic(name, spec, emit=update, init=init, update=update)


def mma_f16_f32(rows: int = 32, columns: int = 32, depth: int = 64) -> Intrinsic:
    """A GPU warp's tensor-core matrix multiply-accumulate: float16 inputs, float32
    accumulation, for a `rows x columns` tile over `depth` steps of k (each a multiple of
    16), as `mma.sync.m16n8k16` instructions (PTX, sm_80 on):
        spec[i, j] = 0.0                                       (float32)
        spec[i, j] += float32(a[i, k]) * float32(b[k, j])      (a, b float16)
    Scope "warp": the 32 threads of a warp run each call together (docs/gpu.md, "Tensor
    cores"). Where the accumulator is a warp array (`store_in("local")` at a GPU block
    loop, every access a warp-scoped intrinsic: `lower/block_registers.py`) it stays in
    the lanes' registers across calls; in memory, a call loads the tile into registers
    and stores it back. The operands' fragments are read with `ldmatrix` where they are
    in shared memory with rows a multiple of 16 bytes apart and 16-byte aligned (checked
    at run time where lowering doesn't know), else element by element: every answer is
    right, and staged operands are fast. `mma_f32_store` copies a warp array out.
    Target "cuda" only, sm_80 or later. bf16 is not here: halo has no bfloat16 type."""
    call = f"halo.intrinsics.mma_f16_f32({rows}, {columns}, {depth})"
    _positive(call, rows=rows, columns=columns, depth=depth)
    for what, size in (("rows", rows), ("columns", columns), ("depth", depth)):
        if size % _MMA:
            raise DefinitionError(f"{call}: {what} must be a multiple of {_MMA}, the side "
                                  "of a tensor-core tile")
    name = f"mma_f16_f32_{rows}x{columns}x{depth}"
    spec, a, b = _matmul_spec(name, float16, rows, columns, depth)
    tiles = (rows // _MMA, columns // _MMA_N)

    def init(ctx) -> None:
        _require_cuda(ctx, call)
        acc = _Accumulator(ctx, call, ctx.operand(spec.name), tiles)
        if acc.in_registers:
            for element in acc.elements():
                ctx.line(f"{element} = 0.0f;")
        else:
            e = ctx.fresh("e")
            out = acc.op
            ctx.line(f"for (int {e} = {ctx.lane}; {e} < {rows * columns}; {e} += 32) "
                     f"{ctx.address(out, f'{e} / {columns}', f'{e} % {columns}')}[0] = 0.0f;")

    def update(ctx) -> None:
        _require_cuda(ctx, call)
        acc = _Accumulator(ctx, call, ctx.operand(spec.name), tiles)
        now = (ctx.operand(a.name), ctx.operand(b.name))
        # Pipelined with its loop (its copies spread over the steps before the last,
        # which loads the next call's first step) where a call has an even number of
        # steps of 16, so that the next call's first lands in the set its first step
        # reads (set 0), and at least 4: with 2, measured slower (docs/gpu.md).
        steps_of_16 = depth // _MMA
        pipelined = ctx.pipelined and steps_of_16 % 2 == 0 and steps_of_16 >= 4
        ahead = (ctx.operand(a.name, ahead=True), ctx.operand(b.name, ahead=True)) \
            if pipelined else ()
        tests = [_ldmatrix_tests(op) for op in (*now, *ahead)]
        if pipelined and None not in tests and any(tests):
            # ldmatrix or not is decided when it runs, each warp in a branch of its own:
            # the handoff's barrier must not be inside one
            pipelined, ahead, tests = False, (), tests[:2]
        acc.load()
        g, t = _lane_parts(ctx)

        def fragments(matrix_loads: bool, ops, left: str, right: str, step: str) -> None:
            """Loads the fragments of A and B (`ops`) of the k step of 16 at `step` into
            the registers `left` (A's m-tiles) and `right` (B's n-tiles)."""
            a_op, b_op = ops
            for r in range(tiles[0]):
                if matrix_loads:  # lane l: row l % 16, columns 8 * (l / 16) on
                    ctx.line(_ldmatrix([f"{left}[{r}][{q}]" for q in range(4)], ctx.address(
                        a_op, f"{16 * r} + ({ctx.lane} & 15)", f"{step} + ({ctx.lane} >> 4) * 8")))
                else:  # a[q]: row g + 8 (q & 1), columns 2t + 8 (q >> 1) and one on
                    for q in range(4):
                        ctx.line(f"        {left}[{r}][{q}] = " + _pair(ctx, a_op, (
                            f"{16 * r + 8 * (q & 1)} + {g}", f"{step} + {8 * (q >> 1)} + 2 * {t}"),
                            (0, 1)) + ";")
            for c in range(tiles[1]):
                if matrix_loads and c % 2 == 0 and c + 1 < tiles[1]:  # two n-tiles at once
                    ctx.line(_ldmatrix([f"{right}[{c + h}][{q}]" for h in range(2)
                                        for q in range(2)], ctx.address(
                        b_op, f"{step} + ({ctx.lane} & 15)",
                        f"{8 * c} + ({ctx.lane} >> 4) * 8"), trans=True))
                elif not matrix_loads:  # b[q]: rows 2t + 8q and one on, column g
                    for q in range(2):
                        ctx.line(f"        {right}[{c}][{q}] = " + _pair(ctx, b_op, (
                            f"{step} + {8 * q} + 2 * {t}", f"{8 * c} + {g}"), (1, 0)) + ";")

        # Two sets of fragment registers: a step's are loaded before the step before it
        # multiplies, so the loads' latency overlaps tensor-core work. Pipelined with its
        # loop, the call's first step was loaded by the call before it (after the
        # handoff, before its last multiplies), and the sets live across iterations.
        left, right = ctx.fresh("a"), ctx.fresh("b")
        registers = f"unsigned {left}[2][{tiles[0]}][4], {right}[2][{tiles[1]}][2];"
        if pipelined:
            ctx.carry(registers)
        else:
            ctx.line(registers)

        def steps(matrix_loads: bool) -> None:
            """The k steps of 16, unrolled, their fragments double-buffered."""
            step, last = ctx.fresh("k"), depth - _MMA
            if pipelined:
                ctx.line(f"if ({ctx.first}) {{")
            fragments(matrix_loads, now, f"{left}[0]", f"{right}[0]", "0")
            if pipelined:
                ctx.line("}")
            ctx.line("    #pragma unroll")
            ctx.line(f"    for (int {step} = 0; {step} < {depth}; {step} += 16) {{")
            this, other = f"(({step} >> 4) & 1)", f"((({step} >> 4) + 1) & 1)"
            ctx.line(f"      if ({step} < {last}) {{")
            fragments(matrix_loads, now, f"{left}[{other}]", f"{right}[{other}]",
                      f"{step} + 16")
            if pipelined:  # the last step: the next call's first, once the handoff is done
                ctx.line("      } else {")
                ctx.handoff()
                fragments(matrix_loads, ahead, f"{left}[{other}]", f"{right}[{other}]", "0")
            ctx.line("      }")
            for r in range(tiles[0]):
                for c in range(tiles[1]):
                    ctx.line(_mma(acc.tile(r, c), f"{left}[{this}][{r}]",
                                  f"{right}[{this}][{c}]"))
            if pipelined:  # the loop's other work, spread over the steps before the last
                for part in range(ctx.overlap_parts):
                    at = part * (steps_of_16 - 1) // ctx.overlap_parts * _MMA
                    ctx.line(f"      if ({step} == {at}) {{")
                    ctx.overlap(part)
                    ctx.line("      }")
            ctx.line("    }")

        if None in tests or not any(tests):  # known while lowering: one way only
            steps(matrix_loads=None not in tests)
        else:
            ctx.line(f"if ({' && '.join(test for op in tests for test in op)}) {{")
            steps(matrix_loads=True)
            ctx.line("} else {")
            steps(matrix_loads=False)
            ctx.line("}")
        acc.store()

    return Intrinsic(name, spec, emit=update, init=init, update=update, scope="warp")


def mma_f32_store(rows: int = 32, columns: int = 32, out: Type = float32) -> Intrinsic:
    """A GPU warp's copy of a `rows x columns` float32 tile, for the copy-out of
    `mma_f16_f32`'s accumulators when they are a warp array (`cache_write("local")` at a
    GPU block loop): `spec[i, j] = acc[i, j]`, or with `out=halo.float16`
    `spec[i, j] = float16(acc[i, j])` (rounded to nearest even: an fp16 matmul's output,
    half the bytes to write). Each lane writes the elements it holds, two adjacent ones at
    once where aligned. From memory, the lanes copy element by element. Scope "warp",
    target "cuda" only."""
    half = out == float16
    call = f"halo.intrinsics.mma_f32_store({rows}, {columns}" + \
        (", out=halo.float16)" if half else ")")
    _positive(call, rows=rows, columns=columns)
    if out not in (float32, float16):
        raise DefinitionError(f"{call}: out must be halo.float32 or halo.float16, not {out}")
    if rows % _MMA or columns % _MMA_N:
        raise DefinitionError(f"{call}: rows must be a multiple of {_MMA} and columns of "
                              f"{_MMA_N}, a tensor-core accumulator tile")
    i, j = Var("i"), Var("j")
    name = f"mma_f32_store_{rows}x{columns}" + ("_f16" if half else "")
    acc = ImageParam(float32, 2, f"{name}_acc")
    spec = Func(f"{name}_spec")
    spec[i, j] = cast(float16, acc[i, j]) if half else acc[i, j]
    spec.bound(i, 0, rows).bound(j, 0, columns)
    tiles = (rows // _MMA, columns // _MMA_N)
    # One element, and two adjacent ones (the first in the lower half) at once
    one = "__float2half_rn({})" if half else "{}"
    pair_type, pair, size = ("__half2", "__floats2half2_rn({}, {})", 4) if half else \
        ("float2", "make_float2({}, {})", 8)

    def emit(ctx) -> None:
        _require_cuda(ctx, call)
        target, source = ctx.operand(spec.name), _Accumulator(ctx, call, ctx.operand(acc.name),
                                                              tiles)
        if not source.in_registers:
            e = ctx.fresh("e")
            row, col = f"{e} / {columns}", f"{e} % {columns}"
            value = one.format(f"{ctx.address(source.op, row, col)}[0]")
            ctx.line(f"for (int {e} = {ctx.lane}; {e} < {rows * columns}; {e} += 32) "
                     f"{ctx.address(target, row, col)}[0] = {value};")
            return
        g, t = _lane_parts(ctx)
        known = target.constant_strides[0]
        aligned_pairs = "false" if known is not None and known % 2 else " && ".join(
            [f"((size_t){target.pointer} & {size - 1}) == 0",
             *([f"({target.strides[0]}) % 2 == 0"] if known is None else [])])
        ctx.line(f"const bool {(aligned := ctx.fresh('pairs'))} = {aligned_pairs};")
        for r in range(tiles[0]):
            for c in range(tiles[1]):
                values = source.tile(r, c)
                for h in range(2):  # rows g and g + 8 of the tile
                    p = ctx.address(target, f"{16 * r + 8 * h} + {g}", f"{8 * c} + 2 * {t}")
                    lo, hi = (f"{values}[{2 * h + q}]" for q in range(2))
                    ctx.line(f"if ({aligned}) *({pair_type}*){p} = {pair.format(lo, hi)}; "
                             f"else {{ {p}[0] = {one.format(lo)}; {p}[1] = {one.format(hi)}; }}")

    return Intrinsic(name, spec, emit=emit, scope="warp")


_MMA = 16  # the rows of an mma.sync.m16n8k16 tile, and its depth
_MMA_N = 8  # its columns


class _Accumulator:
    """The accumulator operand of a tensor-core call: a warp array (each lane's part in
    registers, the layout of `mma.sync`'s accumulators tile by tile: `_warp_index`), or
    memory, which the call loads into registers of that layout and stores back."""

    def __init__(self, ctx, call: str, op, tiles: tuple[int, int]):
        self.ctx, self.op, self.tiles = ctx, op, tiles
        self.in_registers = op.scope == "warp"
        if self.in_registers:
            self.base = _warp_index(call, op, tiles)
        else:
            self.registers = ctx.fresh("acc")

    def tile(self, r: int, c: int) -> str:
        """A C pointer to tile (r, c)'s four floats in this lane."""
        if self.in_registers:
            return f"({self.op.buffer} + {self.base(r, c)})"
        return f"{self.registers}[{r}][{c}]"

    def _each(self) -> list[tuple[int, int, int]]:
        """(tile row, tile column, element) of each of the lane's accumulators."""
        return [(r, c, q) for r in range(self.tiles[0]) for c in range(self.tiles[1])
                for q in range(4)]

    def elements(self) -> list[str]:
        return [f"{self.tile(r, c)}[{q}]" for r, c, q in self._each()]

    def _memory(self, r: int, c: int, q: int) -> str:
        g, t = _lane_parts(self.ctx)
        return self.ctx.address(self.op, f"{16 * r + 8 * (q >> 1)} + {g}",
                                f"{8 * c + (q & 1)} + 2 * {t}") + "[0]"

    def load(self) -> None:
        if self.in_registers:
            return
        self.ctx.line(f"float {self.registers}[{self.tiles[0]}][{self.tiles[1]}][4];")
        for r, c, q in self._each():
            self.ctx.line(f"{self.registers}[{r}][{c}][{q}] = {self._memory(r, c, q)};")

    def store(self) -> None:
        if self.in_registers:
            return
        for r, c, q in self._each():
            self.ctx.line(f"{self._memory(r, c, q)} = {self.registers}[{r}][{c}][{q}];")


def _warp_index(call: str, op, tiles: tuple[int, int]):
    """For a warp array operand: (r, c) -> the index in each lane's array of the four
    floats of the call's accumulator tile (r, c). A warp array of R x S floats (S its row
    length) holds, tile by tile of 16 x 8 (row-major over tiles), the four elements of
    `mma.sync`'s accumulator layout: lane l, g = l / 4, t = l % 4, holds rows g and g + 8,
    columns 2t and 2t + 1."""
    stride, offset, size = op.constant_strides[0], op.constant_offset, op.size
    if stride is None or offset is None or size is None:
        raise ScheduleError(f"{call}: its accumulator {op.buffer} is a warp array addressed "
                            "at an offset that isn't a constant; unroll the loops around "
                            "the call inside the warp's tile")
    row, column = divmod(offset, stride)
    rows = size // stride
    if stride % _MMA_N or rows % _MMA or row % _MMA or column % _MMA_N:
        raise ScheduleError(
            f"{call}: its accumulator {op.buffer} is a warp array of {rows} x {stride} "
            f"floats addressed at ({row}, {column}); a warp array of tensor-core "
            f"accumulators needs rows a multiple of {_MMA}, columns of {_MMA_N}, and each "
            "call's tile at such a multiple")

    def base(r: int, c: int) -> int:
        return ((row // _MMA + r) * (stride // _MMA_N) + column // _MMA_N + c) * 4
    return base


def _lane_parts(ctx) -> tuple[str, str]:
    """(g, t): the lane's group of four and its place in it, the coordinates of
    `mma.sync`'s fragment layouts."""
    return f"({ctx.lane} >> 2)", f"({ctx.lane} & 3)"


def _ldmatrix_tests(op) -> list[str] | None:
    """The run-time tests (C) under which `ldmatrix` may read the operand (shared memory,
    rows a multiple of 16 bytes apart, 16-byte aligned): none where lowering proved it,
    None where it never may."""
    if op.scope != "shared" or (op.constant_strides[0] or 8) % 8:
        return None
    tests = [] if op.constant_strides[0] is not None else [f"({op.strides[0]}) % 8 == 0"]
    if op.alignment < 16:
        tests.append(f"((size_t){op.pointer} & 15) == 0")
    return tests


def _ldmatrix(registers: list[str], address: str, trans: bool = False) -> str:
    """Four 8 x 8 matrices of 16-bit values from shared memory into `registers`, each
    lane giving the address of one row (`ldmatrix.x4`; transposed: `.trans`)."""
    outs = ", ".join(f'"=r"({r})' for r in registers)
    return (f'        asm volatile("ldmatrix.sync.aligned.m8n8.x4{".trans" if trans else ""}'
            f'.shared.b16 {{%0, %1, %2, %3}}, [%4];" : {outs} : '
            f'"r"((unsigned)__cvta_generic_to_shared({address})));')


def _pair(ctx, op, at: tuple[str, str], step: tuple[int, int]) -> str:
    """Two float16 elements of `op`, at `at` and one `step` on, as the 32-bit register of
    a fragment (the first in the low half)."""
    first = ctx.address(op, *at)
    second = ctx.address(op, f"{at[0]} + {step[0]}", f"{at[1]} + {step[1]}")
    return (f"((unsigned)__half_as_ushort({first}[0]) | "
            f"((unsigned)__half_as_ushort({second}[0]) << 16))")


def _mma(acc: str, a: str, b: str) -> str:
    """acc (four floats) += a (16 x 16) * b (16 x 8), one `mma.sync.m16n8k16`."""
    return ('        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 '
            '{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" : '
            + ", ".join(f'"+f"({acc}[{q}])' for q in range(4)) + " : "
            + ", ".join(f'"r"({a}[{q}])' for q in range(4)) + ", "
            + ", ".join(f'"r"({b}[{q}])' for q in range(2)) + ");")


def _require_cuda(ctx, call: str) -> None:
    if ctx.backend != "cuda":
        raise ScheduleError(f"{call}: a tensor-core intrinsic emits CUDA C only; it was "
                            f"asked for the {ctx.backend} backend")
    if int(ctx.arch.removeprefix("sm_") or 0) < 80:
        raise ScheduleError(f"{call}: mma.sync.m16n8k16 needs sm_80 or later; the target is "
                            f"{ctx.arch}")
