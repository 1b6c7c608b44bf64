"""Readable CUDA C from a kernel of lowered, fused halo IR.

One `__global__` function per kernel (`kernel_source`), after the module's prelude
(`PRELUDE`: the helpers that give C the IR's semantics: floor division and modulo that give
0 for a zero divisor, NaN-propagating float min/max, wrapping integer abs, atomic
read-modify-write by compare-and-swap). Names become C identifiers (`out.s0.x` ->
`out_s0_x`, made unique per kernel); every operation on 8- and 16-bit integers is cast back
to its type, so it wraps as the IR says; a `Let` becomes a `const` declaration before the
statement that uses it (`Select` evaluates both branches anyway, so hoisting is safe).

Loops: the block loops of the kernel read `blockIdx` (the innermost loop is x), each
thread-loop nest reads `threadIdx` (the nest's innermost loop is x; threads of an axis the
nest doesn't use skip it), other loops are C `for` loops (`#pragma unroll` for unrolled
ones). Vector IR (a vectorized loop inside a thread) is written a lane at a time, its
dense memory accesses 16 bytes at a time (`vectors.py`). Buffers in "shared" scope are
`__shared__` arrays declared at the top of the kernel (once per buffer, at its largest
size), other buffers allocated inside a kernel are per-thread arrays (registers when their
indices are constants). A tensor intrinsic's call is the CUDA C its emitter writes
(`tensor_calls.py`).

A global buffer may start anywhere and its rows may be any number of elements apart, so
its dense accesses test their addresses when they run (`vectors.py`). `kernel_source(...,
aligned=...)` writes the kernel's twin for calls that keep a promise (each buffer starts
at a multiple of 16 bytes, and its mins, extents and strides are multiples of 16 bytes'
worth of elements: `backends/cuda/__init__.py` checks it at each launch). There, an
access whose index is provably a multiple of its lanes goes without the test, as in shared
memory.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from halo.analysis.simplify import simplify
from halo.backends.cuda import vectors
from halo.backends.cuda.tensor_calls import (
    CudaContext,
    CudaOperand,
    CudaPipeline,
    emit_tensor_call,
)
from halo.errors import InternalError, ScheduleError
from halo.ir import nodes as n
from halo.ir.substitute import uses_var
from halo.ir.types import Type, int32
from halo.ir.visitor import child_nodes, rewrite
from halo.lower.double_buffering import GPU_ASYNC_COMMIT, GPU_ASYNC_COPY, GPU_ASYNC_WAIT
from halo.lower.fuse_gpu_thread_loops import (
    FIRST_THREAD,
    SHARED_ALIGNMENT,
    SYNC_THREADS,
    dynamic_shared_bytes,
    shared_buffers,
    shared_offsets,
)
from halo.lower.warp_reductions import GPU_SHUFFLE_XOR

_SCALAR_PRELUDE = r"""#include <stdint.h>
#include <cuda_fp16.h>

// halo's integer division and modulo: floor semantics, x / 0 == x % 0 == 0.
template <typename T> __device__ __forceinline__ T halo_div(T a, T b) {
    if (b == 0) return 0;
    T q = a / b;
    if ((T)-1 < (T)0 && (a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}
template <typename T> __device__ __forceinline__ T halo_mod(T a, T b) {
    if (b == 0) return 0;
    T r = a % b;
    if ((T)-1 < (T)0 && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
// Float modulo as the IR defines it: a - b * floor(a / b).
template <typename T> __device__ __forceinline__ T halo_fmod(T a, T b) {
    return a - b * floor(a / b);
}
// Float min/max: NaN if either operand is NaN (np.minimum / np.maximum).
template <typename T> __device__ __forceinline__ T halo_fmin(T a, T b) {
    return a != a ? a : b != b ? b : (b < a ? b : a);
}
template <typename T> __device__ __forceinline__ T halo_fmax(T a, T b) {
    return a != a ? a : b != b ? b : (a < b ? b : a);
}
// Integer abs that wraps abs(MIN) to MIN.
template <typename T> __device__ __forceinline__ T halo_abs(T a) {
    return a < 0 ? (T)(0 - a) : a;
}
// One indivisible read-modify-write *addr = f(*addr), by compare-and-swap on the word
// that holds it (the aligned 32-bit word around an 8- or 16-bit value).
template <typename T, typename F> __device__ void halo_atomic_update(T* addr, F f) {
    if constexpr (sizeof(T) == 8) {
        unsigned long long* word = (unsigned long long*)addr;
        unsigned long long old = *word, assumed;
        do {
            assumed = old;
            T value, next;
            memcpy(&value, &assumed, 8);
            next = f(value);
            unsigned long long bits;
            memcpy(&bits, &next, 8);
            old = atomicCAS(word, assumed, bits);
        } while (assumed != old);
    } else {
        unsigned int* word = (unsigned int*)((size_t)addr & ~(size_t)3);
        unsigned int shift = sizeof(T) == 4 ? 0 : ((size_t)addr & 3) * 8;
        unsigned int mask = sizeof(T) == 4 ? 0xffffffffu
                                           : ((1u << (8 * sizeof(T))) - 1) << shift;
        unsigned int old = *word, assumed;
        do {
            assumed = old;
            unsigned int part = (assumed & mask) >> shift, bits = 0;
            T value, next;
            memcpy(&value, &part, sizeof(T));
            next = f(value);
            memcpy(&bits, &next, sizeof(T));
            old = atomicCAS(word, assumed, (assumed & ~mask) | ((bits << shift) & mask));
        } while (assumed != old);
    }
}
// Warp reductions: the value of the lane `offset` away (lane xor offset) in this lane's
// aligned group of `width` lanes (a power of two up to 32), whose lanes all call it.
__device__ __forceinline__ unsigned halo_lane_group(int width) {
    unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
    return width == 32 ? 0xffffffffu : ((1u << width) - 1u) << (lane & ~(unsigned)(width - 1));
}
template <typename T> __device__ __forceinline__ T halo_shuffle_xor(T v, int offset, int width) {
    return __shfl_xor_sync(halo_lane_group(width), v, offset, width);
}
// (the types shuffles don't take travel as an int)
#define HALO_SHUFFLE_AS_INT(T) __device__ __forceinline__ T halo_shuffle_xor(T v, int o, int w) { \
    return (T)__shfl_xor_sync(halo_lane_group(w), (int)v, o, w); }
HALO_SHUFFLE_AS_INT(bool) HALO_SHUFFLE_AS_INT(int8_t) HALO_SHUFFLE_AS_INT(uint8_t)
HALO_SHUFFLE_AS_INT(int16_t) HALO_SHUFFLE_AS_INT(uint16_t)
"""
PRELUDE = _SCALAR_PRELUDE + vectors.PRELUDE

_INT_TYPES = {8: "int8_t", 16: "int16_t", 32: "int32_t", 64: "int64_t"}
_UINT_TYPES = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}
_FLOAT_TYPES = {16: "__half", 32: "float", 64: "double"}
_AXES = ("x", "y", "z")
_BINARY = {n.Add: "+", n.Sub: "-", n.Mul: "*", n.EQ: "==", n.NE: "!=", n.LT: "<", n.LE: "<="}
_BITWISE = {n.And: ("&&", "&"), n.Or: ("||", "|"), n.Xor: ("!=", "^")}
# halo math name -> CUDA function by float width (float16 is computed in float32)
_MATH = {"sqrt": "sqrt", "exp": "exp", "log": "log", "pow": "pow", "sin": "sin", "cos": "cos",
         "tanh": "tanh", "floor": "floor", "ceil": "ceil", "round": "rint", "abs": "fabs"}
# Atomic updates the hardware does in one instruction: (operator, types) -> CUDA function.
_ATOMIC_ADD_TYPES = ("float", "double", "int32_t", "uint32_t", "uint64_t")
_KEYWORDS = frozenset("""auto bool break case char const continue default do double else enum
extern float for goto if inline int long register return short signed sizeof static struct
switch typedef union unsigned void volatile while class namespace template this new delete
true false private public protected virtual operator friend""".split())


def c_type(t: Type) -> str:
    """The C type of a scalar of halo type `t`."""
    if t.lanes != 1:
        raise InternalError(f"the CUDA backend got vector type {t} where it writes one "
                            "lane at a time")
    if t.is_bool:
        return "bool"
    table = _FLOAT_TYPES if t.is_float else _INT_TYPES if t.is_int else _UINT_TYPES
    return table[t.bits]


class CNames:
    """C identifiers for halo names, unique within one kernel."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._used: set[str] = set()

    def __call__(self, name: str) -> str:
        if name not in self._names:
            base = re.sub(r"\W", "_", name)
            if not base or base[0].isdigit() or base in _KEYWORDS or base.startswith("halo_"):
                base = f"v_{base}"
            c, k = base, 1
            while c in self._used:
                k += 1
                c = f"{base}_{k}"
            self._used.add(c)
            self._names[name] = c
        return self._names[name]


@dataclass(frozen=True)
class KernelParam:
    """A parameter of a kernel: a global buffer (pointer) or a scalar, by halo name.
    A buffer the kernel only reads is `const`."""
    name: str
    type: Type
    is_buffer: bool
    read_only: bool = False


def kernel_source(name: str, loop: n.For, params: Sequence[KernelParam],
                  block: tuple[int, int, int], block_axes: int, arch: str = "sm_90",
                  aligned: dict[str, n.Expr] | None = None) -> str:
    """The `__global__` function `name` that runs the fused block-loop nest `loop`, whose
    block loops nest `block_axes` deep (the headers its tensor calls include first).
    `aligned`: write the aligned twin, whose buffers all start at a multiple of 16 bytes,
    and whose scalar parameters have the values given (in terms of the promise's
    multiples: `backends/cuda/__init__.py`)."""
    emitter = _Emitter(block, block_axes, arch)
    if aligned is not None:
        emitter.aligned_buffers = frozenset(p.name for p in params if p.is_buffer)
        emitter.assumed = dict(aligned)
    # Buffers are __restrict__: a pipeline's inputs and outputs are distinct arrays.
    signature = ", ".join(
        f"{'const ' if p.read_only else ''}{c_type(p.type)}* __restrict__ "
        f"{emitter.names(p.name)}" if p.is_buffer
        else f"{c_type(p.type)} {emitter.names(p.name)}" for p in params)
    threads = block[0] * block[1] * block[2]
    emitter.kernel(loop)
    body = "\n".join(emitter.lines)
    includes = "".join(f"#include <{h}>\n" for h in emitter.includes)
    return (f'{includes}extern "C" __global__ void __launch_bounds__({threads})\n'
            f"{name}({signature}) {{\n{body}\n}}\n")


class _Emitter:
    def __init__(self, block: tuple[int, int, int], block_axes: int, arch: str):
        self.block = block
        self.arch = arch
        self.includes: list[str] = []
        self.scopes: dict[str, str] = {}  # buffers allocated in the kernel: their memory
        self.sizes: dict[str, int] = {}  # warp arrays: elements in the whole warp's array
        self.fresh_names = 0
        self.block_axes = block_axes  # how deep the block loops nest
        self.block_depth = 0
        self.names = CNames()
        self.lines: list[str] = []
        self.depth = 1
        # per C scope, what it declares by halo name: a let's value (what vectors.divides
        # may assume), or None (a thread index, a loop variable, an array)
        self.declared: list[dict[str, n.Expr | None]] = [{}]
        # an aligned twin's promise: global buffers that start at a multiple of 16 bytes,
        # and the values of names the kernel doesn't declare (its scalar parameters)
        self.aligned_buffers: frozenset[str] = frozenset()
        self.assumed: dict[str, n.Expr] = {}
        # per serial loop being written, the declarations its pipelined tensor calls
        # carry across its iterations (written before the loop)
        self.carried: list[list[str]] = []

    # ------------------------------------------------------------------ statements

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def open(self, head: str) -> None:
        self.line(f"{head} {{" if head else "{")
        self.depth += 1
        self.declared.append({})

    def close(self, tail: str | None = "}") -> None:
        self.depth -= 1
        self.declared.pop()
        if tail is not None:
            self.line(tail)

    def kernel(self, loop: n.For) -> None:
        # Shared arrays once per buffer (its copies in partitioned loops share the space),
        # aligned as tensor-core loads want (256 bits; 128 bytes for the widest): declared
        # as arrays up to 48 KB, past it as parts of the memory the launch gives the block.
        shared = shared_buffers(loop)
        if dynamic_shared_bytes(loop):
            self.line(f"extern __shared__ __align__({SHARED_ALIGNMENT}) unsigned char "
                      "halo_shared[];")
            for name, offset in shared_offsets(shared).items():
                t = c_type(shared[name][0])
                self.line(f"{t}* const {self.names(name)} = ({t}*)(halo_shared + {offset});")
        else:
            for name, (t, size) in shared.items():
                self.line(f"__shared__ __align__({SHARED_ALIGNMENT}) {c_type(t)} "
                          f"{self.names(name)}[{max(size, 1)}];")
        self.stmt(loop)

    def block_index(self, b: n.For) -> None:
        """Block loop `b`'s variable; the innermost block loop is x."""
        axis = _AXES[self.block_axes - 1 - self.block_depth]
        index = f"(int)blockIdx.{axis}"
        if uses_var(b.body, b.name):  # (a grid axis of extent 1 may be unused)
            self.declare(b.name, int32, index if _is_zero(b.min) else
                         f"{self.expr(b.min)} + {index}")
        self.block_depth += 1
        self._stmt(b.body)
        self.block_depth -= 1

    def declare(self, name: str, t: Type, value: str, ir: n.Expr | None = None) -> None:
        """`const` C variable for halo name `name`, whose value is C `value` (and IR `ir`,
        when known: its alignment may prove vector accesses aligned)."""
        c = self.names(name)
        if name in self.declared[-1]:  # a let of the same name earlier in this scope
            self.open("")
        self.declared[-1][name] = ir
        self.line(f"const {c_type(t)} {c} = {_strip(value)};")

    def _known_lets(self) -> dict[str, n.Expr]:
        known: dict[str, n.Expr | None] = dict(self.assumed)
        for scope in self.declared:
            known.update(scope)
        return {name: value for name, value in known.items() if value is not None}

    def let(self, name: str, value: n.Expr) -> None:
        if vectors.lanes_of(value) == 1:
            self.declare(name, value.type, self.expr(value), value)
            return
        for i, x in enumerate(self.vector_lanes(value)):
            self.declare(vectors.lane_name(name, i), x.type, self.expr(x), x)

    def stmt(self, s: n.Stmt) -> None:
        opened = self.depth
        self._stmt(s)
        while self.depth > opened:
            self.close()

    def _stmt(self, s: n.Stmt) -> None:
        match s:
            case n.Block(stmts=stmts):
                for x in stmts:
                    self.stmt(x)
            case n.LetStmt(name=name, value=value, body=body):
                self.let(name, value)
                self._stmt(body)
            case n.ProducerConsumer(name=name, produce=produce, consume=consume):
                self.line(f"// produce {name}")
                self.stmt(produce)
                self.line(f"// consume {name}")
                self.stmt(consume)
            case n.IfThenElse(condition=cond, then_case=then, else_case=other):
                self.open(f"if ({_strip(self.expr(cond))})")
                self.stmt(then)
                if other is not None:
                    self.close(None)  # the else's line closes the then's braces
                    self.open("} else")
                    self.stmt(other)
                self.close()
            case n.For(kind=n.ForKind.GPU_THREAD):
                self.threads(s)
            case n.For(kind=n.ForKind.GPU_BLOCK):
                self.block_index(s)
            case n.For(name=name, min=lo, extent=extent, kind=kind, body=body):
                at, depth = len(self.lines), self.depth
                self.carried.append([])
                if kind is n.ForKind.UNROLLED:
                    self.line("#pragma unroll")
                v, lo_c = self.names(name), self.expr(lo)
                end = self.expr(extent) if _is_zero(lo) else f"{lo_c} + {self.expr(extent)}"
                self.open(f"for (int {v} = {_strip(lo_c)}; {v} < {_strip(end)}; ++{v})")
                self.declared[-1][name] = None
                self.stmt(body)
                self.close()
                self.lines[at:at] = ["    " * depth + x for x in self.carried.pop()]
            case n.Store(value=n.Call(name=name)) if name == GPU_ASYNC_COPY:
                self.async_store(s)
            case n.Store(index=index) if vectors.lanes_of(index) > 1:
                self.vector_store(s)
            case n.Store(name=name, index=index, value=value):
                self.line(f"{self.names(name)}[{_strip(self.expr(index))}] = "
                          f"{_strip(self.expr(value))};")
            case n.Allocate(name=name, type=t, size=size, body=body, scope=scope):
                if not isinstance(size, n.Const):
                    raise InternalError(f"buffer {name} inside a kernel has size {size}")
                if scope == "shared":  # declared once, at the top of the kernel
                    self.scopes[name] = "shared"
                else:
                    c = self.names(name)
                    if name in self.declared[-1]:  # an unrolled copy's buffer: its own scope
                        self.open("")
                    self.declared[-1][name] = None
                    # (at least one element: C has no zero-sized arrays; an empty region
                    # is never read). A warp array: each lane its 32nd (tensor_calls.py).
                    count = int(size.value)
                    if scope == "warp":
                        count, self.sizes[name] = -(-count // 32), count
                    self.line(f"{c_type(t)} {c}[{max(count, 1)}];")
                    self.scopes[name] = "warp" if scope == "warp" else "local"
                self._stmt(body)
            case n.Evaluate(value=n.Call(name=name)) if name == SYNC_THREADS:
                self.line("__syncthreads();")
            case n.Evaluate(value=n.Call(name=name)) if name == GPU_ASYNC_COMMIT:
                self.line("halo_async_commit();")
            case n.Evaluate(value=n.Call(name=name, args=(waiting,))) if name == GPU_ASYNC_WAIT:
                self.line(f"halo_async_wait<{waiting.value}>();")
            case n.Evaluate(value=value):
                for x in self.vector_lanes(value) if vectors.lanes_of(value) > 1 else [value]:
                    self.line(f"(void){self.expr(x)};")
            case n.Atomic(body=body):
                self.atomic(body)
            case n.TensorCall():
                self.tensor_call(s)
            case _:
                raise InternalError(f"the CUDA backend can't emit {type(s).__name__}")

    def threads(self, loop: n.For) -> None:
        chain = [loop]
        while isinstance(chain[-1].body, n.For) and chain[-1].body.kind is n.ForKind.GPU_THREAD:
            chain.append(chain[-1].body)
        unused = [f"threadIdx.{a} == 0" for i, a in enumerate(_AXES)
                  if i >= len(chain) and self.block[i] > 1]
        if unused:
            self.open(f"if ({' && '.join(unused)})")
        else:
            self.open("")  # a scope of its own: the nest's loop variables
        for i, (axis, t) in enumerate(zip(_AXES, reversed(chain), strict=False)):
            readers = [chain[-1].body, *(inner.min for inner in chain[len(chain) - i:])]
            if not any(uses_var(r, t.name) for r in readers):  # (e.g. a warp-wide call)
                continue
            index = f"(int)threadIdx.{axis}"
            self.declare(t.name, int32,
                         index if _is_zero(t.min) else f"{self.expr(t.min)} + {index}")
        self.stmt(chain[-1].body)
        self.close()

    def tensor_call(self, call: n.TensorCall) -> None:
        """The intrinsic's emitter writes the call's code (tensor_calls.py) in a C block
        of its own, given each operand's address and its strides along the spec's
        dimensions (the buffer's last ones); a warp's lanes meet before and after it."""
        warp = getattr(call.intrinsic, "scope", "thread") == "warp"
        if warp and self.block[0] % 32:
            raise ScheduleError(
                f"{call.name} runs on whole warps, but this kernel's blocks are "
                f"{self.block[0]} threads wide along x, which is not a multiple of 32, so "
                "its warps would straddle rows of threads; make every thread loop bound to x "
                "in this kernel 32 (or a multiple of 32) wide")
        pipeline = None
        if call.first is not None:  # pipelined with its loop (pipeline_tensor_calls.py)
            pipeline = CudaPipeline(_strip(self.expr(call.first)),
                                    self._operands(call, call.ahead),
                                    [self.render(x) for x in _statements(call.overlap)],
                                    self.render(call.handoff),
                                    self.carried[-1])
        ctx = CudaContext(call.name, call.part, self._operands(call, call.operands),
                          self.arch, "((int)threadIdx.x & 31)" if warp else "0", self._fresh,
                          pipeline)
        emit_tensor_call(call.intrinsic.emitter(call.part), ctx)
        for header in ctx.includes:
            if header not in self.includes:
                self.includes.append(header)
        self.line(f"// {call.name} ({call.part})")
        self.open("")
        if warp:
            self.line("__syncwarp();")
        for text in ctx.body():
            self.line(text)
        if warp:
            self.line("__syncwarp();")
        self.close()

    def _operands(self, call: n.TensorCall, elements: Sequence[n.Expr]) -> list[CudaOperand]:
        """The call's operands at `elements` (its operands, or those of its loop's next
        iteration), for its emitter."""
        operands = []
        for name, element, strides in zip(call.operand_names, elements, call.strides,
                                          strict=True):
            if not isinstance(element, n.Load):
                raise InternalError(f"tensor call {call.name}: operand {name} is not flat")
            spec_strides = strides[len(strides) - call.intrinsic.operand_rank(name):]
            buffer = self.names(element.name)
            scope = self.scopes.get(element.name, "global")
            index = simplify(element.index)
            operands.append(CudaOperand(
                name, buffer, element.type, c_type(element.type), scope,
                f"({buffer} + {_strip(self.expr(index))})",
                tuple(_strip(self.expr(x)) for x in spec_strides),
                tuple(int(x.value) if isinstance(x, n.Const) else None for x in spec_strides),
                int(index.value) if scope == "warp" and isinstance(index, n.Const) else None,
                self.sizes.get(element.name), self._alignment(element.name, element.type,
                                                              index)))
        return operands

    def render(self, s: n.Stmt) -> list[str]:
        """The C lines of `s` in a scope of their own, for a tensor call's emitter to
        place."""
        lines, depth = self.lines, self.depth
        self.lines, self.depth = [], 0
        self.open("")
        self.stmt(s)
        self.close()
        rendered, self.lines, self.depth = self.lines, lines, depth
        return rendered

    def _fresh(self, base: str) -> str:
        return self.names(self._fresh_name(base))

    def _fresh_name(self, base: str) -> str:
        self.fresh_names += 1
        return f"{base}.t{self.fresh_names}"

    # --------------------------------------------------------------------- vectors

    def vector_lanes(self, e: n.Expr) -> list[n.Expr]:
        """Each lane of vector `e` as scalar IR, after declaring the lets inside it and
        loading its dense loads (vectors.py)."""
        e = rewrite(e, self._hoisted_let)
        loaded: dict[n.Load, list[n.Expr]] = {}
        for load in _loads_inside_out(e):
            if load not in loaded and self._dense_access(load.name, load.type, load.index,
                                                         load.predicate) is not None:
                loaded[load] = self.load_lanes(load)
        return [vectors.lane(e, i, loaded) for i in range(vectors.lanes_of(e))]

    def _hoisted_let(self, e: n.Expr) -> n.Expr | None:
        if not isinstance(e, n.Let):
            return None
        self.let(e.name, e.value)
        return rewrite(e.body, self._hoisted_let)

    def _dense_access(self, name: str, t: Type, index: n.Expr,
                      predicate: n.Expr | None) -> n.Expr | None:
        """The first index of an access that may read or write several lanes at once
        (dense, every lane, in shared or global memory), else None."""
        if predicate is not None or t.is_bool or self.scopes.get(name) == "local":
            return None
        return vectors.dense_base(index)

    def _chunks(self, name: str, t: Type, base: n.Expr):
        """(first lane, lanes, first index, C template arguments) of each access."""
        for first, size in vectors.chunks(t.lanes, t.bits // 8):
            start = base if first == 0 else n.Add(base, n.const(first, base.type))
            aligned = self._aligned(name, size, start)
            yield first, size, start, f"<{size}, {'false' if aligned else 'true'}>"

    def _aligned(self, name: str, lanes: int, index: n.Expr) -> bool:
        """Whether `lanes` elements of buffer `name` from `index` on are provably aligned
        to their size (shared arrays start at 128 bytes; global buffers too, in an
        aligned twin)."""
        return (self.scopes.get(name) == "shared" or name in self.aligned_buffers) and \
            vectors.divides(lanes, index, self._known_lets())

    def _alignment(self, name: str, t: Type, index: n.Expr) -> int:
        """The bytes (a power of two, up to 128) that the address of element `index` of
        buffer `name` is provably a multiple of."""
        for size in (128, 64, 32, 16, 8, 4, 2):
            if size > t.bytes and self._aligned(name, size // t.bytes, index):
                return size
        return t.bytes

    def load_lanes(self, load: n.Load) -> list[n.Expr]:
        """Declares the chunks of dense `load` and returns its lanes (reads of them)."""
        t = load.type.element_of()
        base = vectors.dense_base(load.index)
        buffer, lanes = self.names(load.name), []
        for _, size, start, template in self._chunks(load.name, load.type, base):
            if size == 1:
                lanes.append(n.Load(t, load.name, start))
                continue
            chunk = self._fresh_name(f"{load.name}.lanes")
            c = self.names(chunk)
            self.line(f"__align__({size * t.bits // 8}) {c_type(t)} {c}[{size}];")
            self.line(f"halo_copy_lanes{template}({c}, &{buffer}[{_strip(self.expr(start))}]);")
            lanes += [n.Load(t, chunk, n.const(j)) for j in range(size)]
        return lanes

    def async_store(self, s: n.Store) -> None:
        """An asynchronous copy into shared memory (`double_buffering`): `cp.async` moves
        4, 8 or 16 bytes, so a scalar of 4 or 8 bytes, or a dense vector cut into such
        chunks; anything else is copied at once (a later barrier orders it the same)."""
        load, *condition = s.value.args
        t, lanes = load.type.element_of(), load.type.lanes
        bases = (s.index, load.index) if lanes == 1 else \
            (vectors.dense_base(s.index), vectors.dense_base(load.index))
        pieces = vectors.chunks(lanes, t.bytes)
        if s.predicate is not None or load.predicate is not None or None in bases or \
                any(size * t.bytes not in (4, 8, 16) for _, size in pieces) or \
                (condition and lanes > 1):
            value = load if not condition else \
                n.Select(condition[0], load, _zero(load.type))
            self._stmt(n.Store(s.name, s.index, value, s.predicate))
            return
        if condition:  # a scalar: its bytes, or zeros
            to, source = (rewrite(b, self._hoisted_let) for b in bases)
            self.line(f"halo_copy_async_or_zero<1>(&{self.names(s.name)}[{_strip(self.expr(to))}], "
                      f"&{self.names(load.name)}[{_strip(self.expr(source))}], "
                      f"{_strip(self.expr(rewrite(condition[0], self._hoisted_let)))});")
            return
        to, source = (rewrite(b, self._hoisted_let) for b in bases)
        for first, size in pieces:
            at = [b if first == 0 else n.Add(b, n.const(first, b.type)) for b in (to, source)]
            # (a scalar is aligned to its size)
            aligned = size == 1 or all(self._aligned(b, size, i) for b, i in
                                       zip((s.name, load.name), at, strict=True))
            check = "false" if aligned else "true"
            self.line(f"halo_copy_async<{size}, {check}>("
                      f"&{self.names(s.name)}[{_strip(self.expr(at[0]))}], "
                      f"&{self.names(load.name)}[{_strip(self.expr(at[1]))}]);")

    def vector_store(self, s: n.Store) -> None:
        value, predicate = s.value, s.predicate
        if predicate is not None:
            # Each lane's predicate once, for the store and the loads under it.
            enabled = n.Var(self._fresh_name(f"{s.name}.enabled"), predicate.type)
            self.let(enabled.name, predicate)
            value = rewrite(value, lambda x: enabled if x == predicate else None)
            predicate = enabled
        values = self.vector_lanes(value)
        index = rewrite(s.index, self._hoisted_let)
        t = value.type.element_of()
        buffer = self.names(s.name)
        base = self._dense_access(s.name, t, index, predicate)
        if base is not None:
            for first, size, start, template in self._chunks(s.name, value.type, base):
                part = ", ".join(_strip(self.expr(v)) for v in values[first:first + size])
                if size == 1:
                    self.line(f"{buffer}[{_strip(self.expr(start))}] = {part};")
                    continue
                c = self._fresh(f"{s.name}.lanes")
                self.line(f"__align__({size * t.bits // 8}) {c_type(t)} {c}[{size}] = "
                          f"{{{part}}};")
                self.line(f"halo_copy_lanes{template}(&{buffer}[{_strip(self.expr(start))}], "
                          f"{c});")
            return
        # Lane by lane, in lane order (a scatter whose lanes meet keeps the last lane's
        # value, as the loop would).
        indices = self.vector_lanes(index)
        enabled = None if predicate is None else self.vector_lanes(predicate)
        for i, (x, v) in enumerate(zip(indices, values, strict=True)):
            text = f"{buffer}[{_strip(self.expr(x))}] = {_strip(self.expr(v))};"
            self.line(text if enabled is None else
                      f"if ({_strip(self.expr(enabled[i]))}) {text}")

    def atomic(self, body: n.Stmt) -> None:
        match body:
            case n.LetStmt(name=name, value=value, body=inner):
                self.open("")
                self.declare(name, value.type, self.expr(value))
                self.atomic(inner)
                self.close()
                return
            case n.Store(name=name, index=index, value=value):
                pass
            case _:
                raise InternalError(f"an atomic update of {type(body).__name__}")
        if self.scopes.get(name) == "local":
            # A thread's own array: no other thread writes it (and CUDA has no atomics
            # on local memory: the launch fails).
            self._stmt(body)
            return
        t = c_type(value.type)
        target = f"&{self.names(name)}[{_strip(self.expr(index))}]"
        old = n.Load(value.type, name, index)
        match value:
            case n.Add(a=a, b=b) if t in _ATOMIC_ADD_TYPES and old in (a, b):
                delta = b if a == old else a
                self.line(f"atomicAdd({target}, {_strip(self.expr(delta))});")
                return
        current = self.names(f"{name}.current")
        replaced = _replace_load(value, old, n.Var(f"{name}.current", value.type))
        self.line(f"halo_atomic_update({target}, [&]({t} {current}) {{ "
                  f"return ({t}){_strip(self.expr(replaced))}; }});")

    # ---------------------------------------------------------------- expressions

    def expr(self, e: n.Expr) -> str:
        t = e.type
        match e:
            case n.Const(value=v):
                return _constant(t, v)
            case n.Var(name=name):
                return self.names(name)
            case n.Let(name=name, value=value, body=body):
                self.declare(name, value.type, self.expr(value), value)
                return self.expr(body)
            case n.Cast(value=v):
                return self.cast(t, v)
            case n.Not(a=a):
                return f"(!{self.expr(a)})" if t.is_bool else self.wrap(t, f"~{self.expr(a)}")
            case n.Select(condition=c, true_value=a, false_value=b):
                return f"({self.expr(c)} ? {self.expr(a)} : {self.expr(b)})"
            case n.Load(name=name, index=index):
                load = f"{self.names(name)}[{_strip(self.expr(index))}]"
                if t.bits == 8 and self.scopes.get(name) in ("shared", "local"):
                    return f"halo_opaque_byte({load})"  # (see the prelude)
                return load
            case n.Call(kind=n.CallKind.INTRINSIC, name=name) if name == FIRST_THREAD:
                return "(threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)"
            case n.Call(kind=n.CallKind.INTRINSIC, name=name, args=(v, offset, width)) \
                    if name == GPU_SHUFFLE_XOR:
                value = self.expr(v) if t.bits >= 32 else f"({c_type(t)}){self.expr(v)}"
                return f"halo_shuffle_xor({value}, {offset.value}, {width.value})"
            case n.Call(kind=n.CallKind.MATH, name=name, args=args):
                return self.math(t, name, args)
            case n.BinaryOp(a=a, b=b):
                return self.binary(e, a, b)
        raise InternalError(f"the CUDA backend can't emit {type(e).__name__} ({e})")

    def binary(self, e: n.Expr, a: n.Expr, b: n.Expr) -> str:
        t, x, y = a.type, self.expr(a), self.expr(b)
        op = type(e)
        if op is n.Add and isinstance(b, n.Const) and b.value < 0 and -b.value <= 2**31 - 1:
            return self.wrap(t, f"({x} - {_constant(t, -b.value)})")
        if op in _BINARY:
            text = f"({x} {_BINARY[op]} {y})"
            return text if isinstance(e, n.Compare) else self.wrap(t, text)
        if op in _BITWISE:
            logical, bitwise = _BITWISE[op]
            return f"({x} {logical} {y})" if t.is_bool else self.wrap(t, f"({x} {bitwise} {y})")
        if op is n.Div:
            return f"({x} / {y})" if t.is_float else f"halo_div<{c_type(t)}>({x}, {y})"
        if op is n.Mod:
            return f"halo_fmod({x}, {y})" if t.is_float else f"halo_mod<{c_type(t)}>({x}, {y})"
        if op in (n.Min, n.Max):
            which = "min" if op is n.Min else "max"
            if t.is_float:
                return f"halo_f{which}<{c_type(t)}>({x}, {y})"
            return self.wrap(t, f"{which}({x}, {y})")
        raise InternalError(f"the CUDA backend can't emit {op.__name__}")

    def wrap(self, t: Type, text: str) -> str:
        """`text` cast back to `t` where C's integer promotion widened it."""
        if (t.is_int or t.is_uint) and t.bits < 32 or t.is_float and t.bits == 16:
            return f"(({c_type(t)}){text})"
        return text

    def cast(self, t: Type, v: n.Expr) -> str:
        x = self.expr(v)
        if t.is_bool:
            return f"({x} != 0)"
        if v.type.is_float and v.type.bits == 16 or t.is_float and t.bits == 16:
            if not v.type.is_float:  # through float, as no integer type converts directly
                x = f"((float){x})"
            return f"(({c_type(t)})((float){x}))" if v.type.bits == 16 else \
                f"(({c_type(t)}){x})"
        return f"(({c_type(t)}){x})"

    def math(self, t: Type, name: str, args: Sequence[n.Expr]) -> str:
        values = [self.expr(a) for a in args]
        if name == "abs" and not t.is_float:
            return f"halo_abs<{c_type(t)}>({values[0]})" if t.is_int else values[0]
        if name not in _MATH or not t.is_float:
            raise InternalError(f"math function {name!r} on {t}")
        if t.bits == 16:
            inner = ", ".join(f"(float){x}" for x in values)
            return f"((__half){_MATH[name]}f({inner}))"
        suffix = "f" if t.bits == 32 else ""
        return f"{_MATH[name]}{suffix}({', '.join(values)})"


def _loads_inside_out(e: n.Expr) -> list[n.Load]:
    """The vector loads in `e`, each after the loads inside its index."""
    found: list[n.Load] = []

    def visit(x: n.Node) -> None:
        for child in child_nodes(x):
            visit(child)
        if isinstance(x, n.Load) and vectors.lanes_of(x) > 1:
            found.append(x)
    visit(e)
    return found


def _replace_load(e: n.Expr, old: n.Load, new: n.Var) -> n.Expr:
    return rewrite(e, lambda x: new if x == old else None)


def _is_zero(e: n.Expr) -> bool:
    return isinstance(e, n.Const) and e.value == 0


def _statements(s: n.Stmt | None) -> tuple[n.Stmt, ...]:
    """The statements of a block, in order (none for None)."""
    return () if s is None else s.stmts if isinstance(s, n.Block) else (s,)


_PARENTHESES = re.compile(r"[()]")


def _strip(text: str) -> str:
    """`text` without the parentheses around all of it."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for p in _PARENTHESES.finditer(text):  # (the first one closes at the end, or not)
        depth += 1 if p.group() == "(" else -1
        if depth == 0:
            return text[1:-1] if p.end() == len(text) else text
    return text


def _constant(t: Type, v: int | float) -> str:
    if t.is_bool:
        return "true" if v else "false"
    if t.is_float:
        v = float(v)
        if math.isnan(v):
            text = "__int_as_float(0x7fc00000)" if t.bits != 64 else \
                "__longlong_as_double(0x7ff8000000000000LL)"
        elif math.isinf(v):
            sign = "-" if v < 0 else ""
            text = f"{sign}__int_as_float(0x7f800000)" if t.bits != 64 else \
                f"{sign}__longlong_as_double(0x7ff0000000000000LL)"
        else:  # repr round-trips, so the literal is exact also as a float32
            text = repr(v) + ("f" if t.bits != 64 else "")
        return f"((__half){text})" if t.bits == 16 else f"({text})" if v < 0 else text
    v = int(v)
    if t.bits == 64:
        text = f"{v}LL" if t.is_int else f"{v}ULL"
        if t.is_int and v == -(2**63):
            text = "(-9223372036854775807LL - 1)"
    elif t.bits == 32 and t.is_uint:
        text = f"{v}u"
    elif t.bits == 32:
        text = f"{v}" if v != -(2**31) else "(-2147483647 - 1)"
    else:
        return f"(({c_type(t)}){v})"
    return f"({text})" if v < 0 else text


def _zero(t: Type) -> n.Expr:
    """Zero of type `t` (a broadcast for a vector type)."""
    zero = n.const(0, t.element_of())
    return zero if t.lanes == 1 else n.Broadcast(zero, t.lanes)
