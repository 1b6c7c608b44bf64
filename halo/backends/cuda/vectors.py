"""Vector IR in CUDA C: lane by lane, with dense memory accesses of up to 16 bytes.

A vectorized loop inside a GPU thread (`vectorize_loops` runs for GPU targets too) is
vector IR: ramps, broadcasts, lane-wise operators, loads and stores of one element per
lane. CUDA C has no arithmetic on vectors (`float4` is a struct), so the emitter writes
each lane as scalar C (`lane`): a ramp's lane i is `base + i * stride`, a broadcast is
its value, an operator applies to its operands' lane i. Lanes are registers after nvcc,
as the unrolled loop's would be.

What a vector buys on a GPU is the memory access: one 16-byte load or store
(`ld.global.v4.f32`) instead of four. A load or store whose index is a ramp of stride 1
(dense) and whose lanes all run (no predicate) is cut into `chunks` of up to 16 bytes (4
floats, 2 doubles, 8 halves, 16 bytes), each accessed at once through a small aligned
array of its lanes. Such an access must be aligned to its size:

- in shared memory (arrays aligned to 128 bytes) when the index, its lets replaced by
  their values and simplified, is provably a multiple of the chunk's lanes (`halo.analysis.modulus`:
  its value modulo a constant, from its structure, as Halide's ModulusRemainder);
- otherwise (global memory: a caller's array may start anywhere; or an index not proven
  aligned), the prelude's `halo_copy_lanes` checks the address when it runs and falls
  back to one access per lane: a uniform branch when the rows are
  aligned, correct when they are not.

A thread's own arrays (registers) and predicated or non-dense accesses go lane by lane.
"""
from __future__ import annotations

from halo.analysis.modulus import modulus
from halo.analysis.simplify import simplify
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.substitute import expand_lets

# The widest access in bytes (ld.v4.b32, ld.v2.b64).
MAX_BYTES = 16

PRELUDE = r"""// A dense access of N lanes of T at once (N * sizeof(T) is 2, 4, 8 or 16 bytes): a
// copy between memory and a local array of the lanes aligned to that size (a load
// copies to the array, a store from it). CHECK: the addresses are tested when it runs,
// and a misaligned copy goes lane by lane.
template <int BYTES> struct halo_bits;
template <> struct halo_bits<2> { typedef unsigned short type; };
template <> struct halo_bits<4> { typedef unsigned int type; };
template <> struct halo_bits<8> { typedef uint2 type; };
template <> struct halo_bits<16> { typedef uint4 type; };
template <int N, bool CHECK, typename T>
__device__ __forceinline__ void halo_copy_lanes(T* to, const T* from) {
    typedef typename halo_bits<N * sizeof(T)>::type V;
    if (!CHECK || ((size_t)to | (size_t)from) % sizeof(V) == 0) {
        *(V*)to = *(const V*)from;
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) to[i] = from[i];
    }
}
// A misaligned asynchronous copy, out of line: inlined, ptxas may predicate its N loads
// and stores into the aligned path instead of branching around them (in a tensor-core
// k loop, that was most of the instructions issued). Both pointers are memory, never a
// thread's registers, so the call costs no local memory.
template <int N, typename T>
__device__ __noinline__ void halo_copy_each(T* to, const T* from) {
#pragma unroll
    for (int i = 0; i < N; ++i) to[i] = from[i];
}
// Double buffering: a copy of N lanes of T (N * sizeof(T) is 4, 8 or 16 bytes) from
// global to shared memory, started now (cp.async, sm_80 on; before, made at once);
// halo_async_commit closes the group of copies started since the last, and
// halo_async_wait<K> waits until at most K groups are in flight. CHECK: the addresses
// are tested when it runs, and a misaligned copy is made at once, lane by lane.
template <int N, bool CHECK, typename T>
__device__ __forceinline__ void halo_copy_async(T* to, const T* from) {
#if __CUDA_ARCH__ >= 800
    constexpr int BYTES = N * sizeof(T);
    if (!CHECK || __builtin_expect(((size_t)to | (size_t)from) % BYTES == 0, 1)) {
        unsigned address = (unsigned)__cvta_generic_to_shared(to);
        if (BYTES == 16) {
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                         :: "r"(address), "l"(from) : "memory");
        } else {
            asm volatile("cp.async.ca.shared.global [%0], [%1], %2;"
                         :: "r"(address), "l"(from), "n"(BYTES) : "memory");
        }
    } else
#endif
    {
        halo_copy_each<N>(to, from);
    }
}
// The same for a scalar, or zeros where `copy` is false (the source isn't read then).
template <int N, typename T>
__device__ __forceinline__ void halo_copy_async_or_zero(T* to, const T* from, bool copy) {
#if __CUDA_ARCH__ >= 800
    unsigned address = (unsigned)__cvta_generic_to_shared(to);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"(address), "l"(from),
                 "n"(N * (int)sizeof(T)), "r"(copy ? N * (int)sizeof(T) : 0) : "memory");
#else
#pragma unroll
    for (int i = 0; i < N; ++i) to[i] = copy ? from[i] : T(0);
#endif
}
__device__ __forceinline__ void halo_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int K> __device__ __forceinline__ void halo_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" :: "n"(K) : "memory");
#endif
}
// A byte read from shared or local memory, passed through an empty asm: nvcc 13 merges
// two byte loads 2 bytes apart feeding a dp2a into one 32-bit load and takes its 16-bit
// halves, bytes 1 and 3 included (a wrong sum of products of uint8 values).
template <typename T> __device__ __forceinline__ T halo_opaque_byte(T v) {
    unsigned short w = (unsigned char)v;
    asm("" : "+h"(w));
    return (T)w;
}
"""


def lanes_of(e: n.Expr) -> int:
    return e.type.lanes


def lane_name(name: str, i: int) -> str:
    """The scalar variable that holds lane `i` of the vector variable `name`."""
    return f"{name}.lane{i}"


def lane(e: n.Expr, i: int, known: dict[n.Load, list[n.Expr]]) -> n.Expr:
    """Lane `i` of vector expression `e` as scalar IR (free of `Let`s: the emitter
    declares them first). Loads in `known` read the lanes already loaded; any other
    vector load reads its lane on its own, under its predicate's lane."""
    if lanes_of(e) == 1:
        return e
    t = e.type.element_of()
    match e:
        case n.Ramp(base=base, stride=stride):
            if i == 0:
                return base
            if isinstance(stride, n.Const):
                return n.Add(base, n.const(stride.value * i, stride.type))
            return n.Add(base, n.Mul(stride, n.const(i, stride.type)))
        case n.Broadcast(value=value):
            return value
        case n.Var(name=name):
            return n.Var(lane_name(name, i), t)
        case n.Load() if e in known:
            return known[e][i]
        case n.Load(name=name, index=index, predicate=predicate):
            load = n.Load(t, name, lane(index, i, known))
            if predicate is None:
                return load
            # A disabled lane reads nothing (C's ?: evaluates one side) and gives zero.
            return n.Select(lane(predicate, i, known), load, n.const(0, t))
        case n.BinaryOp(a=a, b=b):
            return type(e)(lane(a, i, known), lane(b, i, known))
        case n.Not(a=a):
            return n.Not(lane(a, i, known))
        case n.Cast(value=value):
            return n.Cast(t, lane(value, i, known))
        case n.Select(condition=c, true_value=x, false_value=y):
            return n.Select(*(lane(v, i, known) for v in (c, x, y)))
        case n.Call(name=name, args=args, kind=kind):
            return n.Call(t, name, tuple(lane(a, i, known) for a in args), kind)
    raise InternalError(f"the CUDA backend can't take a lane of {type(e).__name__} ({e})")


def dense_base(index: n.Expr) -> n.Expr | None:
    """The first element of a dense vector index (a ramp of stride 1), else None."""
    if isinstance(index, n.Ramp) and isinstance(index.stride, n.Const) \
            and index.stride.value == 1:
        return index.base
    return None


def chunks(lanes: int, element_bytes: int) -> list[tuple[int, int]]:
    """(first lane, lanes) of each access of a dense vector of `lanes` elements: the
    widest power of two that fits in 16 bytes and in what is left."""
    widest = max(MAX_BYTES // element_bytes, 1)
    out, first = [], 0
    while first < lanes:
        size = 1 << (min(widest, lanes - first).bit_length() - 1)
        out.append((first, size))
        first += size
    return out


def divides(lanes: int, index: n.Expr, lets: dict[str, n.Expr]) -> bool:
    """Whether `index` is a multiple of `lanes` for every value of its variables, the
    let-bound ones (`lets`) replaced by their values."""
    m, r = modulus(simplify(expand_lets(index, lets)))
    return (m % lanes == 0 if m else True) and r % lanes == 0


__all__ = ["PRELUDE", "chunks", "dense_base", "divides", "lane", "lane_name", "lanes_of"]
