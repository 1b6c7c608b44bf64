"""`halo.Intrinsic`: a tensor intrinsic that `tensorize` can put in place of a loop nest.

    spec = halo.Func("mma_spec")                 # what the intrinsic computes, fixed shape
    spec[i, j] = 0.0
    spec[i, j] += a[i, r] * b[r, j]
    spec.bound(i, 0, 16).bound(j, 0, 16)
    mma = halo.Intrinsic("mma16", spec, emit=...)

`emit(ctx)` produces the backend's code for the spec's definition that a tensorized stage
stands for; `init` and `update`, when given, take the place of `emit` for the pure
definition and for the reduction of a reduction spec. `ctx` is the backend's context: for
the LLVM backend `halo.backends.llvm.tensor_calls.LLVMContext` (llvmlite's IR builder, the
operands' addresses and strides, LLVM intrinsics, inline assembly); `ctx.backend` names
the backend, so one emitter can serve several (docs/schedule.md, "Declaring an
intrinsic"). halo's own intrinsics are in `halo.intrinsics`.

`scope` says which threads run one call: "thread" (the default: one thread, as on the
host) or "warp" (the 32 threads of a GPU warp run each call together, as tensor-core
instructions do; only on target "cuda", where lowering gives the thread loops around the
call a loop of the 32 lanes, docs/gpu.md "Tensor cores").

A saved schedule names the intrinsics it tensorizes with; loading it again takes the
Intrinsic objects from the caller (`apply_json(f, text, intrinsics=[mma])`), never
from a registry of every Intrinsic made in the process.
"""
from __future__ import annotations

from collections.abc import Callable
from itertools import count

from halo.errors import DefinitionError
from halo.ir.nodes import Call as _Call
from halo.ir.nodes import Const as _Const
from halo.ir.visitor import walk
from halo.lang.func import Func
from halo.lang.names import claim_name

# Who runs one call: one thread, or the 32 threads of a GPU warp together.
SCOPES = ("thread", "warp")
_serials = count()  # tells apart Intrinsics of one name in compiled-code caches


class Intrinsic:
    """A tensor intrinsic: `spec` (a Func whose every dimension has a constant `bound`, and
    whose RDom, if any, has constant extents) says what it computes; `emit` produces
    backend code for it; `init` and `update`, when given, emit the reduction's
    initialization and accumulation separately; `scope` ("thread" or "warp") says whether
    one thread or a GPU warp's 32 threads together run each call."""

    def __init__(self, name: str, spec: Func, emit: Callable, init: Callable | None = None,
                 update: Callable | None = None, scope: str = "thread"):
        name = claim_name(name, "intrinsic")
        if scope not in SCOPES:
            raise DefinitionError(f"Intrinsic {name}: scope must be one of "
                                  f"{', '.join(map(repr, SCOPES))}, not {scope!r}")
        if not isinstance(spec, Func) or not spec.defined:
            raise DefinitionError(f"Intrinsic {name}: spec must be a defined halo Func "
                                  "describing what the intrinsic computes")
        for what, fn in (("emit", emit), ("init", init), ("update", update)):
            if fn is not None and not callable(fn):
                raise DefinitionError(f"Intrinsic {name}: {what} must be callable")
        if emit is None:
            raise DefinitionError(f"Intrinsic {name}: emit is required")
        shape = []
        for v in spec.args:
            lo, extent = spec.schedule.bounds.get(v.name, (None, None))
            if not (isinstance(lo, _Const) and isinstance(extent, _Const)):
                raise DefinitionError(
                    f"Intrinsic {name}: dimension {v.name} of spec {spec.name} has no constant "
                    f"size; give it one with {spec.name}.bound({v.name}, 0, extent)")
            shape.append(extent.value)
        last = spec.definitions[-1]
        rvars = list(last.rdom.rvars) if last.rdom is not None else []
        for r in rvars:
            if not (isinstance(r.min.node, _Const) and isinstance(r.extent.node, _Const)):
                raise DefinitionError(f"Intrinsic {name}: the reduction {r.name} of spec "
                                      f"{spec.name} must have a constant range")
        if len(spec.definitions) > 2:
            raise DefinitionError(f"Intrinsic {name}: spec {spec.name} has "
                                  f"{len(spec.definitions) - 1} updates; give it at most one")
        if last.rdom is not None and last.rdom.predicate is not None:
            raise DefinitionError(f"Intrinsic {name}: the reduction of spec {spec.name} has a "
                                  "where condition; an intrinsic computes a whole tile")
        self.name, self.spec, self.emit, self.init, self.update = name, spec, emit, init, update
        self.scope = scope
        self.shape = tuple(shape)
        self.loop_names = tuple([*(v.name for v in spec.args), *(r.name for r in rvars)])
        self._serial = next(_serials)

    def loops_for(self, update: bool) -> tuple[str, ...]:
        """The spec's loops that a stage of this kind (an update or a pure definition)
        stands for: all of them for an update, the pure ones for a pure definition."""
        if update or len(self.spec.definitions) == 1:
            return self.loop_names
        return self.loop_names[:len(self.shape)]

    def operand_rank(self, name: str) -> int:
        """How many dimensions the spec's buffer `name` (its own name or an input's) has."""
        if name == self.spec.name:
            return len(self.spec.args)
        for d in self.spec.definitions:
            for x in walk(d.value):
                if isinstance(x, _Call) and x.name == name:
                    return len(x.args)
        raise DefinitionError(f"Intrinsic {self.name}: its spec {self.spec.name} reads no "
                              f"buffer {name}")

    def emitter(self, part: str) -> Callable:
        """The function that emits `part` ("init", "update" or "emit") of the spec."""
        return {"init": self.init, "update": self.update}.get(part) or self.emit

    @property
    def loop_count(self) -> int:
        """How deep the loop nest it replaces is: the spec's dimensions and reduction."""
        return len(self.loop_names)

    def __repr__(self) -> str:
        return (f"Intrinsic({self.name!r}, shape={self.shape}, scope={self.scope!r}, "
                f"serial={self._serial})")
