"""Lowered halo statements to an LLVM module, through llvmlite's `ir.IRBuilder`.

Input: a lowered, flattened `Stmt`: For, LetStmt, Block, IfThenElse, Evaluate, Store,
Atomic (a Store made indivisible, see `atomics.py`), Allocate and TensorCall (written by
its intrinsic's emitter, see `tensor_calls.py`), over expressions Const,
Var, Cast, the binary operators, Not, Select, math Calls, Load, Let, and the vector forms
vectorize_loops makes of them (vector types, Ramp, Broadcast, Loads and Stores at vector
indices with predicates). Anything else (Provide, Realize, Func calls) is a bug in
lowering and raises `InternalError`.

Output: an `ir.Module` holding one function

    void name(T0* buffer0, ..., i32 scalar, float param, ...)

with its parameters in `Argument` order: a `noalias` pointer per buffer (every buffer
argument is distinct memory; the runtime checks it) and a value per scalar (float16 as its
`i16` bits, see `llvm_types.parameter_type`), plus an internal task function per parallel
loop. Operators get their semantics from `arithmetic.py` (for scalars and vectors alike),
vector memory accesses, ramps and broadcasts their LLVM form from `vectors.py` (strided
stores that together fill a span are found by `interleaved_stores.py` and written as one),
parallel loops their closures and libgomp calls from `parallel.py`; this module owns
control flow, scopes and memory.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

from llvmlite import ir

from halo.backends.arguments import Argument
from halo.backends.llvm import arithmetic, atomics, parallel, tensor_calls, vectors
from halo.backends.llvm.interleaved_stores import InterleavedRun, interleaved_runs
from halo.backends.llvm.llvm_types import (
    INDEX,
    POINTER,
    memory_type,
    parameter_type,
    value_type,
)
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.types import Type, int32, int64
from halo.target import host_cpu


def generate_module(name: str, body: n.Stmt, args: Sequence[Argument],
                    num_threads: int, strict_float: bool = False) -> ir.Module:
    """An LLVM module defining `void name(args...)` that runs `body`, its parallel loops on
    teams of `num_threads` threads. Float `+ - *` may be contracted into fused
    multiply-adds unless `strict_float` (see arithmetic.py)."""
    for a in args:
        value_type(a.type)  # raises for types this backend can't represent
    names = [a.name for a in args]
    duplicates = sorted({x for x in names if names.count(x) > 1})
    if duplicates:
        raise InternalError(f"function {name!r} has duplicate arguments {duplicates}")
    module = ir.Module(name=name)
    signature = ir.FunctionType(
        ir.VoidType(), [POINTER if a.kind == "buffer" else parameter_type(a.type) for a in args])
    function = ir.Function(module, signature, name)
    emitter = _FunctionEmitter(function, num_threads, strict_float)
    emitter.bind_arguments(args)
    emitter.emit(body)
    return module


class _Binding(NamedTuple):
    """What a name means while its scope lasts: a scalar value, or a buffer's address."""
    type: Type  # value type for scalars, element type for buffers
    value: ir.Value


@contextmanager
def _bound(scope: dict[str, _Binding], name: str, binding: _Binding) -> Iterator[None]:
    """Bind `name` in `scope` for the duration of a `with` block, then restore what it
    shadowed."""
    shadowed = scope.get(name)
    scope[name] = binding
    try:
        yield
    finally:
        if shadowed is None:
            del scope[name]
        else:
            scope[name] = shadowed


def _loop_type(loop: n.For) -> Type:
    """The integer type of `loop`'s counter, which its min and extent share."""
    t = loop.min.type
    if not t.is_integer or loop.extent.type != t:
        raise InternalError(f"loop {loop.name!r} has bounds of types {t} and "
                            f"{loop.extent.type}; expected one integer type")
    return t


# IR operator -> the function of arithmetic.py that implements its semantics
# A stack buffer of a size known only at run time goes on the stack up to this many bytes
# (halo's and Halide's limit for small buffers), on the heap past it.
DYNAMIC_STACK_BYTES = 16 * 1024
# Every buffer halo allocates starts on a cache line, which is at least any vector's
# width: a vector access at a multiple of its width from the start then never spans two
# lines (malloc's 16-byte alignment split every 64-byte access of a large buffer in two).
_ALIGNMENT = 64

_CONTRACTIBLE = (n.Add, n.Sub, n.Mul)
# Operators an int32 index is computed through in 64 bits (_wide_index).
_WIDENED = (n.Add, n.Sub, n.Mul, n.Min, n.Max)
_BINARY_OPERATORS = {
    n.Add: arithmetic.add,
    n.Sub: arithmetic.sub,
    n.Mul: arithmetic.mul,
    n.Div: arithmetic.div,
    n.Mod: arithmetic.mod,
    n.Min: arithmetic.minimum,
    n.Max: arithmetic.maximum,
    n.And: arithmetic.and_,
    n.Or: arithmetic.or_,
    n.Xor: arithmetic.xor,
    n.EQ: arithmetic.equal,
    n.NE: arithmetic.not_equal,
    n.LT: arithmetic.less_than,
    n.LE: arithmetic.less_equal,
}


class _FunctionEmitter:
    """Emits the body of one function. Statements and expressions dispatch by node class
    name to `_stmt_<Class>` and `_expr_<Class>`."""

    def __init__(self, function: ir.Function, num_threads: int, strict_float: bool):
        self._function = function
        self._num_threads = num_threads
        self._strict_float = strict_float
        # The entry block holds the stack allocations and the decoding of parameters, so
        # each `alloca` runs once; it branches to the code of the body once that is done.
        self._entry = ir.IRBuilder(function.append_basic_block("entry"))
        self._body_start = function.append_basic_block("body")
        self._builder = ir.IRBuilder(self._body_start)
        self._scalars: dict[str, _Binding] = {}
        self._buffers: dict[str, _Binding] = {}
        self._extended: dict[int, tuple[ir.Block, ir.Value, ir.Value]] = {}  # _wide_index
        # Every other loop kind runs serially until its own emitter joins this table:
        # nodes.py promises that the kind never changes the result, only the speed.
        self._loop_emitters = {kind: self._serial_loop for kind in n.ForKind}
        self._loop_emitters[n.ForKind.PARALLEL] = self._parallel_loop

    def bind_arguments(self, args: Sequence[Argument]) -> None:
        """Name the function's parameters after `args` and bring them into scope."""
        for arg, parameter in zip(args, self._function.args, strict=True):
            parameter.name = arg.name
            if arg.kind == "buffer":
                parameter.add_attribute("noalias")
                self._buffers[arg.name] = _Binding(arg.type, parameter)
            else:
                value = parameter
                if parameter.type != value_type(arg.type):
                    value = self._entry.bitcast(parameter, value_type(arg.type))
                self._scalars[arg.name] = _Binding(arg.type, value)

    def emit(self, body: n.Stmt) -> None:
        self._stmt(body)
        self._finish()

    def _finish(self) -> None:
        self._builder.ret_void()
        self._entry.branch(self._body_start)

    # ------------------------------------------------------------------------- statements

    def _stmt(self, s: n.Stmt) -> None:
        method = getattr(self, f"_stmt_{type(s).__name__}", None)
        if method is None:
            raise InternalError(f"the LLVM backend can't compile a {type(s).__name__} "
                                "statement: its input must be lowered and flattened")
        method(s)

    def _stmt_Block(self, s: n.Block) -> None:
        for stmt in interleaved_runs(s.stmts):
            if isinstance(stmt, InterleavedRun):
                self._interleaved_store(stmt)
            else:
                self._stmt(stmt)

    def _stmt_ProducerConsumer(self, s: n.ProducerConsumer) -> None:
        """A marker for readers of the IR: the produce part runs, then the consume part."""
        self._stmt(s.produce)
        self._stmt(s.consume)

    def _stmt_Evaluate(self, s: n.Evaluate) -> None:
        self._expr(s.value)

    def _stmt_LetStmt(self, s: n.LetStmt) -> None:
        value = self._expr(s.value)
        with _bound(self._scalars, s.name, _Binding(s.value.type, value)):
            self._stmt(s.body)

    def _stmt_IfThenElse(self, s: n.IfThenElse) -> None:
        condition = self._condition(s.condition)
        if s.else_case is None:
            with self._builder.if_then(condition):
                self._stmt(s.then_case)
            return
        with self._builder.if_else(condition) as (then, otherwise):
            with then:
                self._stmt(s.then_case)
            with otherwise:
                self._stmt(s.else_case)

    def _stmt_For(self, s: n.For) -> None:
        self._loop_emitters[s.kind](s)

    def _serial_loop(self, loop: n.For) -> None:
        t = _loop_type(loop)
        self._counted_loop(loop, t, self._expr(loop.min), self._expr(loop.extent))

    def _counted_loop(self, loop: n.For, t: Type, start: ir.Value, extent: ir.Value) -> None:
        """for (k = 0; k < extent; k++) { name = start + k; loop.body }. Counting from zero
        keeps the end out of the arithmetic: start + extent overflows for a loop that ends
        at the type's maximum, as a region ending at int32's maximum does."""
        b = self._builder
        preheader = b.block
        header = self._function.append_basic_block(f"{loop.name}.loop")
        body = self._function.append_basic_block(f"{loop.name}.body")
        exit_block = self._function.append_basic_block(f"{loop.name}.end")
        b.branch(header)

        b.position_at_end(header)
        done = b.phi(start.type, name=f"{loop.name}.done")
        done.add_incoming(ir.Constant(start.type, 0), preheader)
        b.cbranch(arithmetic.less_than(b, t, done, extent), body, exit_block)

        b.position_at_end(body)
        # done < extent, so neither start + done (a point of the loop) nor done + 1 can
        # overflow: saying so lets LLVM widen the counter to 64 bits and vectorize
        # without runtime checks.
        no_wrap = "nsw" if t.is_int else "nuw"
        counter = b.add(start, done, name=loop.name, flags=(no_wrap,))
        with _bound(self._scalars, loop.name, _Binding(t, counter)):
            self._stmt(loop.body)
        step = b.add(done, ir.Constant(done.type, 1), flags=(no_wrap,))
        done.add_incoming(step, b.block)
        b.branch(header)

        b.position_at_end(exit_block)

    def _parallel_loop(self, loop: n.For) -> None:
        """The body runs in a task function on a team of threads, which claim chunks of
        the iterations; parallel.py describes the task and its closure."""
        t = _loop_type(loop)
        start, extent = self._expr(loop.min), self._expr(loop.extent)
        closure = parallel.Closure(loop, value_type(t),
                                   {name: s.value for name, s in self._scalars.items()},
                                   {name: s.value for name, s in self._buffers.items()})
        task = parallel.declare_task(self._function.module,
                                     f"{self._function.name}.{loop.name}.task")
        self._emit_task(task, closure, loop, t)
        b = self._builder
        # An empty loop wakes no threads; the chunk arithmetic relies on extent > 0.
        with b.if_then(arithmetic.less_than(b, t, ir.Constant(start.type, 0), extent)):
            parallel.run_on_threads(b, task, closure.pack(self._entry, b, start, extent),
                                    self._num_threads)

    def _emit_task(self, task: ir.Function, closure: parallel.Closure, loop: n.For,
                   t: Type) -> None:
        """The code of `task`: unpack `closure`, then run chunks of `loop` while any are
        left to claim.

        The chunk runs in a function of its own, inlined into the task, whose buffer
        parameters are `noalias` like the kernel's: pointers loaded from the closure say
        nothing about aliasing, and without it LLVM reloads what a store might have
        changed (a broadcast `A[i, k]` in matmul's inner loop, benchmarks/: matmul)."""
        emitter = _FunctionEmitter(task, self._num_threads, self._strict_float)
        start, extent, scalars, buffers = closure.unpack(emitter._entry, task.args[0])
        values = [*scalars.values(), *buffers.values()]
        chunk = ir.Function(task.module, ir.FunctionType(
            ir.VoidType(), [start.type, extent.type, *(v.type for v in values)]),
            task.module.get_unique_name(f"{task.name}.chunk"))
        chunk.linkage = "internal"
        chunk.attributes.add("alwaysinline")
        chunk_emitter = _FunctionEmitter(chunk, self._num_threads, self._strict_float)
        parameters = iter(chunk.args[2:])
        chunk_emitter._scalars = {name: _Binding(self._scalars[name].type, next(parameters))
                                  for name in scalars}
        chunk_emitter._buffers = {}
        for name in buffers:
            parameter = next(parameters)
            parameter.add_attribute("noalias")
            chunk_emitter._buffers[name] = _Binding(self._buffers[name].type, parameter)
        chunk_emitter._counted_loop(loop, t, chunk.args[0], chunk.args[1])
        chunk_emitter._finish()
        b = emitter._builder
        parallel.claim_chunks(b, closure, task.args[0], extent, lambda first, count: b.call(
            chunk, [b.add(start, first), count, *values]))
        emitter._finish()

    def _stored_value(self, s: n.Store, buffer: _Binding) -> ir.Value:
        t = s.value.type
        if t.element_of() != buffer.type:
            raise InternalError(f"Store of a value of type {t} into {buffer.type} "
                                f"buffer {s.name!r}")
        value = self._expr(s.value)
        return self._builder.zext(value, memory_type(t)) if t.is_bool else value

    def _stmt_Store(self, s: n.Store) -> None:
        buffer = self._buffer(s.name)
        t = s.value.type
        value = self._stored_value(s, buffer)
        if t.lanes == 1:
            self._require_no_predicate(s.predicate, f"store into {s.name!r}")
            self._builder.store(value, self._element_address(buffer, s.index))
            return
        mask = self._mask(s.predicate, t.lanes)
        span = self._vector_index(s.index, t.lanes)
        if span is None:
            vectors.scatter(self._builder, value, self._element_addresses(buffer, s.index),
                            mask, buffer.type.bytes)
            return
        address = self._element_address(buffer, span.first, inbounds=mask is None)
        vectors.store(self._builder, value, address, mask, buffer.type.bytes, span.reversed)

    def _interleaved_store(self, run: InterleavedRun) -> None:
        """The stores of `run` as one dense store of their values' lanes interleaved
        (interleaved_stores.py)."""
        buffer = self._buffer(run.name)
        b = self._builder
        value = vectors.interleave(b, [self._stored_value(s, buffer) for s in run.stores])
        mask = self._mask(run.predicate, run.stores[0].index.lanes)
        if mask is not None:
            mask = vectors.interleave(b, [mask] * run.stride)
        address = self._element_address(buffer, run.first, inbounds=mask is None)
        vectors.store(b, value, address, mask, buffer.type.bytes)

    def _stmt_Atomic(self, s: n.Atomic) -> None:
        """An indivisible update of one element; atomics.py picks the instruction."""
        match s.body:
            case n.LetStmt(name=name, value=value, body=body):
                self._stmt(n.LetStmt(name, value, n.Atomic(body)))
                return
            case n.Store(name=name, index=index) as store:
                buffer = self._buffer(name)

                def emit_value(e: n.Expr, old: str, value: ir.Value | None) -> ir.Value:
                    if value is None:
                        return self._expr(e)
                    with _bound(self._scalars, old, _Binding(store.value.type, value)):
                        return self._expr(e)

                atomics.emit_atomic_store(self._builder, store,
                                          self._element_address(buffer, index),
                                          memory_type(buffer.type), emit_value)
                return
        raise InternalError(f"an atomic block must hold one store:\n{s.body!r}")

    def _stmt_TensorCall(self, s: n.TensorCall) -> None:
        """The intrinsic's emitter writes the code (tensor_calls.py), given each operand's
        address and its strides along the spec's dimensions (the buffer's last ones)."""
        operands = []
        for name, element, strides in zip(s.operand_names, s.operands, s.strides, strict=True):
            buffer = self._buffer(element.name)
            spec_strides = strides[len(strides) - s.intrinsic.operand_rank(name):]
            operands.append(tensor_calls.TensorOperand(
                name, element.name, buffer.type, self._element_address(buffer, element.index),
                tuple(self._index(x) for x in spec_strides),
                tuple(int(x.value) if isinstance(x, n.Const) else None for x in spec_strides)))
        tensor_calls.emit_tensor_call(self._builder, s, operands, host_cpu().features,
                                      self._strict_float)

    def _stmt_Allocate(self, s: n.Allocate) -> None:
        if s.scope == "heap":
            self._heap_allocation(s)
        elif s.scope == "stack":
            self._stack_allocation(s)
        else:
            raise InternalError(f"allocation {s.name!r} has scope {s.scope!r}; the LLVM "
                                "backend knows 'heap' and 'stack'")

    def _heap_allocation(self, s: n.Allocate) -> None:
        """A cache-line aligned allocation of size * element bytes before the body, freed
        after it."""
        b = self._builder
        size = b.mul(self._index(s.size), ir.Constant(INDEX, s.type.bytes))
        pointer = self._aligned_malloc(size, s.name)
        with _bound(self._buffers, s.name, _Binding(s.type, pointer)):
            self._stmt(s.body)
        b.call(self._c_function("free", ir.VoidType(), [POINTER]), [pointer])

    def _stack_allocation(self, s: n.Allocate) -> None:
        """An `alloca` of a constant size in the entry block, so that a loop around the
        allocation reuses one stack slot instead of growing the stack each iteration."""
        size = s.size
        if not isinstance(size, n.Const):
            self._dynamic_stack_allocation(s)
            return
        if not (size.type.is_integer and size.value >= 0):
            raise InternalError(f"stack allocation {s.name!r} has size {expr_to_str(size)}; "
                                "it must be a non-negative integer")
        pointer = self._entry.alloca(memory_type(s.type), size=ir.Constant(INDEX, size.value),
                                     name=s.name)
        pointer.align = _ALIGNMENT
        with _bound(self._buffers, s.name, _Binding(s.type, pointer)):
            self._stmt(s.body)

    def _dynamic_stack_allocation(self, s: n.Allocate) -> None:
        """A stack buffer whose size is known only when it runs: an `alloca` where the
        buffer takes at most `DYNAMIC_STACK_BYTES`, else malloc (a size the stack may not
        hold), freed after the body. The stack pointer is saved before and restored after,
        so a loop around the allocation doesn't grow the stack each iteration. A negative
        size compares as a huge unsigned one and takes the heap path."""
        b = self._builder
        size = b.mul(self._index(s.size), ir.Constant(INDEX, s.type.bytes))
        saved = b.call(self._c_function("llvm.stacksave.p0", POINTER, []), [])
        small = b.icmp_unsigned("<=", size, ir.Constant(INDEX, DYNAMIC_STACK_BYTES))
        with b.if_else(small) as (then, otherwise):
            with then:
                on_stack = b.alloca(ir.IntType(8), size=size, name=f"{s.name}.stack")
                on_stack.align = _ALIGNMENT
                from_stack = b.block
            with otherwise:
                on_heap = self._aligned_malloc(size, f"{s.name}.heap")
                from_heap = b.block
        pointer = b.phi(POINTER, name=s.name)
        pointer.add_incoming(on_stack, from_stack)
        pointer.add_incoming(on_heap, from_heap)
        with _bound(self._buffers, s.name, _Binding(s.type, pointer)):
            self._stmt(s.body)
        with b.if_then(b.not_(small)):
            b.call(self._c_function("free", ir.VoidType(), [POINTER]), [pointer])
        b.call(self._c_function("llvm.stackrestore.p0", ir.VoidType(), [POINTER]), [saved])

    def _aligned_malloc(self, size: ir.Value, name: str) -> ir.Value:
        """aligned_alloc(_ALIGNMENT, size rounded up to a multiple of it), freed by free."""
        b = self._builder
        rounded = b.and_(b.add(size, ir.Constant(INDEX, _ALIGNMENT - 1)),
                         ir.Constant(INDEX, -_ALIGNMENT))
        allocate = self._c_function("aligned_alloc", POINTER, [INDEX, INDEX])
        return b.call(allocate, [ir.Constant(INDEX, _ALIGNMENT), rounded], name=name)

    def _c_function(self, name: str, result: ir.Type, params: list[ir.Type]) -> ir.Function:
        module = self._function.module
        existing = module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(module, ir.FunctionType(result, params), name)

    # ------------------------------------------------------------------------ expressions

    def _expr(self, e: n.Expr) -> ir.Value:
        if isinstance(e, n.BinaryOp):
            return self._binary(e)
        method = getattr(self, f"_expr_{type(e).__name__}", None)
        if method is None:
            raise InternalError(f"the LLVM backend can't compile a {type(e).__name__} "
                                f"expression: {expr_to_str(e)}")
        return method(e)

    def _binary(self, e: n.BinaryOp) -> ir.Value:
        operator = _BINARY_OPERATORS.get(type(e))
        if operator is None:
            raise InternalError(f"unknown binary operator {type(e).__name__}")
        if e.a.type != e.b.type:
            raise InternalError(f"operands of {expr_to_str(e)} have different types "
                                f"{e.a.type} and {e.b.type}")
        value = operator(self._builder, e.a.type, self._expr(e.a), self._expr(e.b))
        if e.a.type.is_float and type(e) in _CONTRACTIBLE and not self._strict_float:
            value.flags.append("contract")  # a * b + c may become one FMA
        return value

    def _expr_Const(self, e: n.Const) -> ir.Value:
        value = float(e.value) if e.type.is_float else int(e.value)
        return ir.Constant(value_type(e.type), value)

    def _expr_Var(self, e: n.Var) -> ir.Value:
        binding = self._scalars.get(e.name)
        if binding is None:
            raise InternalError(
                f"variable {e.name!r} is free in function {self._function.name!r}: it is not "
                "a scalar argument, a loop variable, or bound by an enclosing LetStmt or Let")
        if binding.type != e.type:
            raise InternalError(f"variable {e.name!r} is used as {e.type} but bound to a "
                                f"{binding.type} value")
        return binding.value

    def _expr_Cast(self, e: n.Cast) -> ir.Value:
        return arithmetic.cast(self._builder, e.value.type, e.type, self._expr(e.value))

    def _expr_Not(self, e: n.Not) -> ir.Value:
        return arithmetic.not_(self._builder, e.a.type, self._expr(e.a))

    def _expr_Select(self, e: n.Select) -> ir.Value:
        if e.true_value.type != e.false_value.type:
            raise InternalError(f"branches of {expr_to_str(e)} have different types "
                                f"{e.true_value.type} and {e.false_value.type}")
        # A scalar condition picks whole vectors; a vector one picks lane by lane.
        if e.condition.type.lanes == 1:
            condition = self._condition(e.condition)
        else:
            condition = self._mask(e.condition, e.type.lanes)
        return self._builder.select(condition, self._expr(e.true_value),
                                    self._expr(e.false_value))

    def _expr_Call(self, e: n.Call) -> ir.Value:
        if e.kind is not n.CallKind.MATH:
            raise InternalError(f"{e.kind.value} call {expr_to_str(e)} survived lowering")
        if any(a.type != e.type for a in e.args):
            raise InternalError(f"arguments of {expr_to_str(e)} are not all {e.type}")
        args = [self._expr(a) for a in e.args]
        return arithmetic.math_call(self._builder, e.name, e.type, args)

    def _expr_Load(self, e: n.Load) -> ir.Value:
        buffer = self._buffer(e.name)
        t = e.type
        if t.element_of() != buffer.type:
            raise InternalError(f"Load of type {t} from {buffer.type} buffer {e.name!r}")
        if t.lanes == 1:
            self._require_no_predicate(e.predicate, f"load from {e.name!r}")
            address = self._element_address(buffer, e.index)
            value = self._builder.load(address, typ=memory_type(t))
        else:
            value = self._vector_load(buffer, e)
        return self._builder.trunc(value, value_type(t)) if t.is_bool else value

    def _vector_load(self, buffer: _Binding, e: n.Load) -> ir.Value:
        mask = self._mask(e.predicate, e.type.lanes)
        span = self._vector_index(e.index, e.type.lanes)
        strided = vectors.strided_span(e.index) if span is None else None
        if strided is not None:
            address = self._element_address(buffer, strided.first, inbounds=mask is None)
            return vectors.strided_load(self._builder, memory_type(e.type), address, strided,
                                        mask, buffer.type.bytes)
        if span is None:
            return vectors.gather(self._builder, memory_type(e.type),
                                  self._element_addresses(buffer, e.index), mask,
                                  buffer.type.bytes)
        address = self._element_address(buffer, span.first, inbounds=mask is None)
        return vectors.load(self._builder, memory_type(e.type), address, mask,
                            buffer.type.bytes, span.reversed)

    def _expr_Ramp(self, e: n.Ramp) -> ir.Value:
        t = e.type
        if t.is_bool or e.base.type.lanes != 1 or e.stride.type != e.base.type:
            raise InternalError(f"{expr_to_str(e)} must have a scalar number base and a "
                                f"stride of its type; they are {e.base.type} and "
                                f"{e.stride.type}")
        base, stride = self._expr(e.base), self._expr(e.stride)
        b = self._builder
        if isinstance(stride, ir.Constant):
            if isinstance(base, ir.Constant):
                return vectors.constant_ramp(t, base.constant, stride.constant)
            steps = vectors.constant_ramp(t, 0, stride.constant)
        else:
            steps = arithmetic.mul(b, t, vectors.broadcast(b, stride, e.lanes),
                                   vectors.lane_numbers(t))
        return arithmetic.add(b, t, vectors.broadcast(b, base, e.lanes), steps)

    def _expr_Broadcast(self, e: n.Broadcast) -> ir.Value:
        if e.value.type.lanes != 1:
            raise InternalError(f"{expr_to_str(e)} broadcasts a {e.value.type}, not a scalar")
        return vectors.broadcast(self._builder, self._expr(e.value), e.lanes)

    def _expr_Let(self, e: n.Let) -> ir.Value:
        value = self._expr(e.value)
        with _bound(self._scalars, e.name, _Binding(e.value.type, value)):
            return self._expr(e.body)

    # ---------------------------------------------------------------------------- helpers

    def _condition(self, e: n.Expr) -> ir.Value:
        if e.type.is_bool and e.type.lanes == 1:
            return self._expr(e)
        raise InternalError(f"condition {expr_to_str(e)} has type {e.type}, not bool")

    def _mask(self, predicate: n.Expr | None, lanes: int) -> ir.Value | None:
        """The `<lanes x i1>` of a vector condition or predicate (None stays None)."""
        if predicate is None:
            return None
        if not predicate.type.is_bool or predicate.type.lanes != lanes:
            raise InternalError(f"predicate or condition {expr_to_str(predicate)} has type "
                                f"{predicate.type}; expected {lanes} lanes of bool")
        return self._expr(predicate)

    def _require_no_predicate(self, predicate: n.Expr | None, access: str) -> None:
        if predicate is not None:
            raise InternalError(f"the scalar {access} has predicate "
                                f"{expr_to_str(predicate)}; only vector accesses have one")

    def _vector_index(self, index: n.Expr, lanes: int) -> vectors.DenseSpan | None:
        """The consecutive elements that vector `index` addresses, or None to gather or
        scatter."""
        if index.type.lanes != lanes:
            raise InternalError(f"index {expr_to_str(index)} has type {index.type} for an "
                                f"access of {lanes} lanes")
        return vectors.dense_span(index)

    def _index(self, e: n.Expr) -> ir.Value:
        """An integer expression extended, by its signedness, to a 64-bit address offset
        (one per lane for a vector)."""
        if not e.type.is_integer:
            raise InternalError(f"index or size {expr_to_str(e)} has type {e.type}; "
                                "expected an integer")
        if e.type == int32:
            return self._wide_index(e)
        if e.type.element_of() == int32:
            return self._wide_vector_index(e)
        return arithmetic.cast(self._builder, e.type, int64.with_lanes(e.type.lanes),
                               self._expr(e))

    def _wide_vector_index(self, e: n.Expr) -> ir.Value:
        """A vector of int32 indices (a gather's or scatter's) computed in 64 bits, as
        `_wide_index` computes a scalar one: a ramp across a buffer of more than 2**31
        elements must not wrap."""
        t = int64.with_lanes(e.type.lanes)
        b = self._builder
        if type(e) in _WIDENED:
            operator = _BINARY_OPERATORS[type(e)]
            return operator(b, t, self._wide_vector_index(e.a), self._wide_vector_index(e.b))
        if isinstance(e, n.Broadcast):
            return vectors.broadcast(b, self._wide_index(e.value), e.lanes)
        if isinstance(e, n.Ramp):
            steps = arithmetic.mul(b, t, vectors.broadcast(b, self._wide_index(e.stride),
                                                           e.lanes), vectors.lane_numbers(t))
            return arithmetic.add(b, t, vectors.broadcast(b, self._wide_index(e.base),
                                                          e.lanes), steps)
        return arithmetic.cast(b, e.type, t, self._expr(e))

    def _wide_index(self, e: n.Expr) -> ir.Value:
        """A scalar int32 index computed in 64 bits, as Halide does. halo's int32 `+ - *`
        never overflow (nodes.py) and min/max commute with extension, so extending their
        operands gives the extended result. Extending only the result hides the sum from
        LLVM: once it reassociates the 32-bit sum (dropping `nsw`), every address in a loop
        costs a 32-bit add and an extension, and constant offsets (a stencil's taps) don't
        fold into the addressing mode."""
        if type(e) in _WIDENED and e.type == int32:
            operator = _BINARY_OPERATORS[type(e)]
            return operator(self._builder, int64, self._wide_index(e.a), self._wide_index(e.b))
        if isinstance(e, n.Const):
            return ir.Constant(value_type(int64), int(e.value))
        value = self._expr(e)
        if not isinstance(e, n.Var):
            return arithmetic.cast(self._builder, e.type, int64, value)
        # A variable is read by many indices of a block: extend it once there.
        block = self._builder.block
        cached = self._extended.get(id(value))  # (block, value: keeps the id unique, sext)
        if cached is None or cached[0] is not block or cached[1] is not value:
            cached = self._extended[id(value)] = (block, value, self._builder.sext(
                value, value_type(int64)))
        return cached[2]

    def _buffer(self, name: str) -> _Binding:
        buffer = self._buffers.get(name)
        if buffer is None:
            raise InternalError(f"buffer {name!r} is neither an argument of function "
                                f"{self._function.name!r} nor allocated around its use")
        return buffer

    def _element_address(self, buffer: _Binding, index: n.Expr, inbounds: bool = True
                         ) -> ir.Value:
        """The address of element `index` of `buffer`. inbounds: halo only accesses elements
        inside its buffers; a masked access, whose first lane may be disabled, says False."""
        return self._builder.gep(buffer.value, [self._index(index)], inbounds=inbounds,
                                 source_etype=memory_type(buffer.type))

    def _element_addresses(self, buffer: _Binding, index: n.Expr) -> ir.Value:
        """The vector of addresses of elements `index` (a vector) of `buffer`. Not inbounds:
        the disabled lanes of a gather or scatter may point anywhere."""
        b = self._builder
        bases = vectors.broadcast(b, buffer.value, index.type.lanes)
        return b.gep(bases, [self._index(index)], source_etype=memory_type(buffer.type))
