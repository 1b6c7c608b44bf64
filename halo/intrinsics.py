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
* `mma_f16_f32(rows, columns, depth)`: a GPU warp's tensor-core multiply-accumulate on
  WMMA fragments (float16 x float16 summed into float32; docs/gpu.md, "Tensor cores"):
      spec[i, j] = 0.0
      spec[i, j] += float32(a[i, k]) * float32(b[k, j])
bf16 (`vdpbf16ps` on the host, bf16 tensor cores) is not here: halo has no bfloat16 type,
so no spec can say what it computes. Each emitter refuses a backend it doesn't write.
"""
from __future__ import annotations

from llvmlite import ir

from halo.errors import DefinitionError, ScheduleError
from halo.ir.types import float16, float32, int8, int32, uint8
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
    16: WMMA fragments of 16 x 16 x 16, `nvcuda::wmma`, which nvcc lowers to `mma.sync`):
        spec[i, j] = 0.0                                       (float32)
        spec[i, j] += float32(a[i, k]) * float32(b[k, j])      (a, b float16)
    Scope "warp": the 32 threads of a warp run each call together (docs/gpu.md, "Tensor
    cores"). A call loads the tile's accumulators into fragments, runs the whole `depth`
    with them (each fragment of a and b loaded once per step of 16 and used for a row or
    column of tiles), and stores them back, so the tile stays in registers across the
    call's reduction. WMMA wants each operand 32-byte aligned with rows a multiple of 16
    bytes apart; a call whose operands aren't (checked at run time, where lowering doesn't
    know) computes the tile with the warp's lanes one element each, so every answer is
    right, and only aligned tiles are fast: stage the operands in shared memory
    (`cache_read("shared")`, whose arrays are aligned) with rows of a multiple of 8 halves.
    Target "cuda" only, sm_70 or later. bf16 is not here: halo has no bfloat16 type."""
    call = f"halo.intrinsics.mma_f16_f32({rows}, {columns}, {depth})"
    _positive(call, rows=rows, columns=columns, depth=depth)
    for what, size in (("rows", rows), ("columns", columns), ("depth", depth)):
        if size % _WMMA:
            raise DefinitionError(f"{call}: {what} must be a multiple of {_WMMA}, the side "
                                  "of a WMMA fragment")
    name = f"mma_f16_f32_{rows}x{columns}x{depth}"
    spec, a, b = _matmul_spec(name, float16, rows, columns, depth)
    tiles = (rows // _WMMA, columns // _WMMA)

    def init(ctx) -> None:
        _require_cuda(ctx, call)
        out = ctx.operand(spec.name)
        fast = _wmma_condition(ctx, [out])
        ctx.line(f"if ({fast}) {{")
        acc = _fragments(ctx, "accumulator", "float", "acc", tiles)
        ctx.line(f"    nvcuda::wmma::fill_fragment({acc}[0][0], 0.0f);")
        for r in range(tiles[0]):
            for c in range(tiles[1]):
                ctx.line(f"    nvcuda::wmma::store_matrix_sync({ctx.address(out, 16 * r, 16 * c)}"
                         f", {acc}[0][0], {out.strides[0]}, nvcuda::wmma::mem_row_major);")
        ctx.line("} else {")
        e = ctx.fresh("e")
        ctx.line(f"    for (int {e} = {ctx.lane}; {e} < {rows * columns}; {e} += 32) "
                 f"{ctx.address(out, f'{e} / {columns}', f'{e} % {columns}')}[0] = 0.0f;")
        ctx.line("}")

    def update(ctx) -> None:
        _require_cuda(ctx, call)
        out, a_op, b_op = (ctx.operand(x) for x in (spec.name, a.name, b.name))
        fast = _wmma_condition(ctx, [out, a_op, b_op])
        ctx.line(f"if ({fast}) {{")
        acc = _fragments(ctx, "accumulator", "float", "acc", tiles)
        left = _fragments(ctx, "matrix_a", "__half", "a", (tiles[0], 1),
                          "nvcuda::wmma::row_major")
        right = _fragments(ctx, "matrix_b", "__half", "b", (1, tiles[1]),
                           "nvcuda::wmma::row_major")
        for r in range(tiles[0]):
            for c in range(tiles[1]):
                ctx.line(f"    nvcuda::wmma::load_matrix_sync({acc}[{r}][{c}], "
                         f"{ctx.address(out, 16 * r, 16 * c)}, {out.strides[0]}, "
                         "nvcuda::wmma::mem_row_major);")
        step = ctx.fresh("k")
        ctx.line("    #pragma unroll")
        ctx.line(f"    for (int {step} = 0; {step} < {depth}; {step} += 16) {{")
        for r in range(tiles[0]):
            ctx.line(f"        nvcuda::wmma::load_matrix_sync({left}[{r}][0], "
                     f"{ctx.address(a_op, 16 * r, step)}, {a_op.strides[0]});")
        for c in range(tiles[1]):
            ctx.line(f"        nvcuda::wmma::load_matrix_sync({right}[0][{c}], "
                     f"{ctx.address(b_op, step, 16 * c)}, {b_op.strides[0]});")
        for r in range(tiles[0]):
            for c in range(tiles[1]):
                ctx.line(f"        nvcuda::wmma::mma_sync({acc}[{r}][{c}], {left}[{r}][0], "
                         f"{right}[0][{c}], {acc}[{r}][{c}]);")
        ctx.line("    }")
        for r in range(tiles[0]):
            for c in range(tiles[1]):
                ctx.line(f"    nvcuda::wmma::store_matrix_sync("
                         f"{ctx.address(out, 16 * r, 16 * c)}, {acc}[{r}][{c}], "
                         f"{out.strides[0]}, nvcuda::wmma::mem_row_major);")
        ctx.line("} else {")
        e, s, kk = ctx.fresh("e"), ctx.fresh("sum"), ctx.fresh("kk")
        row, col = f"{e} / {columns}", f"{e} % {columns}"
        ctx.line(f"    for (int {e} = {ctx.lane}; {e} < {rows * columns}; {e} += 32) {{")
        ctx.line(f"        float {s} = {ctx.address(out, row, col)}[0];")
        ctx.line(f"        for (int {kk} = 0; {kk} < {depth}; ++{kk}) {s} += "
                 f"(float){ctx.address(a_op, row, kk)}[0] * "
                 f"(float){ctx.address(b_op, kk, col)}[0];")
        ctx.line(f"        {ctx.address(out, row, col)}[0] = {s};")
        ctx.line("    }")
        ctx.line("}")

    return Intrinsic(name, spec, emit=update, init=init, update=update, scope="warp")


_WMMA = 16  # the side of a WMMA fragment (m16n16k16)


def _require_cuda(ctx, call: str) -> None:
    if ctx.backend != "cuda":
        raise ScheduleError(f"{call}: a tensor-core intrinsic emits CUDA C only; it was "
                            f"asked for the {ctx.backend} backend")
    if int(ctx.arch.removeprefix("sm_") or 0) < 70:
        raise ScheduleError(f"{call}: tensor cores need sm_70 or later; the target is "
                            f"{ctx.arch}")


def _wmma_condition(ctx, operands) -> str:
    """The C condition under which WMMA may load and store every operand: 32-byte
    aligned, rows a multiple of 16 bytes apart ("false" where lowering knows they aren't)."""
    ctx.include("mma.h")
    conditions = []
    for op in operands:
        multiple = 16 // op.type.bytes
        known = op.constant_strides[0]
        if known is not None and known % multiple:
            return "false"
        if known is None:
            conditions.append(f"({op.strides[0]}) % {multiple} == 0")
        conditions.append(f"((size_t){op.pointer} & 31) == 0")
    return " && ".join(conditions)


def _fragments(ctx, use: str, element: str, base: str, shape: tuple[int, int],
               layout: str = "") -> str:
    """Declares `shape` WMMA fragments; returns their C name."""
    name = ctx.fresh(base)
    layout = f", {layout}" if layout else ""
    ctx.line(f"    nvcuda::wmma::fragment<nvcuda::wmma::{use}, 16, 16, 16, {element}{layout}> "
             f"{name}[{shape[0]}][{shape[1]}];")
    return name
