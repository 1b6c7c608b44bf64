"""Machine code from LLVM IR: the host target machine, the O3 pipeline, and MCJIT engines.

The target machine (host CPU name and features) and the pass builder are built once per
process, on first use: their setup would otherwise dominate the compile time of a small
kernel. Each compiled module gets its own MCJIT engine, which owns the module's machine
code. An engine also takes ownership of the target machine it is handed, so each gets a
fresh one (well under a millisecond); the shared one optimizes and prints assembly. A live
engine holds about 0.7 MB, all of it freed with its `NativeModule`.

Fast-math stays off: the IR carries no fast-math flags and the target machine's default
options fuse a multiply and an add only where the IR allows it, so results match NumPy's.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache

import llvmlite.binding as llvm

from halo.backends.llvm.single_lane_stores import split_single_lane_stores
from halo.errors import InternalError


@dataclass(frozen=True)
class NativeModule:
    """Machine code for one LLVM module, alive as long as this object is."""

    optimized_ir: str
    engine: llvm.ExecutionEngine
    object_code: bytes = b""  # what MCJIT emitted, for the on-disk cache

    def function_address(self, name: str) -> int:
        return self.engine.get_function_address(name)


class _HostTarget:
    """The process-wide compilation state. LLVM's pass builder and target machine are not
    documented as thread-safe, so every use holds `lock`."""

    def __init__(self) -> None:
        # Never llvm.initialize(): it raises on llvmlite >= 0.45.
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        # Inline assembly (tensor intrinsics' emitters may write it) is parsed by LLVM
        llvm.initialize_native_asmparser()
        # LLVM's loop vectorizer, if-converting a loop body with a branch (halo's tail
        # guards, which partition_loops leaves only in the copies for short extents),
        # predicated a division inside the branch and then read its loop-invariant result
        # from lane 0, which may be a disabled lane: the masked store went to a garbage
        # address (tests/fuzz/regressions/test_predicated_division_in_a_guarded_tail.py).
        # Loops with branches are left to halo's vectorizer. (A process-wide LLVM option.)
        llvm.set_option("halo", "-enable-if-conversion=false")
        self.triple = llvm.get_process_triple()
        self._target = llvm.Target.from_triple(self.triple)
        self._cpu = llvm.get_host_cpu_name()
        self._features = llvm.get_host_cpu_features().flatten()
        self.machine = self.new_machine()
        self.data_layout = str(self.machine.target_data)
        tuning = llvm.create_pipeline_tuning_options(speed_level=3)
        tuning.loop_vectorization = True
        # Off: halo writes its own vector code, and LLVM's SLP vectorizer hit an internal
        # assertion that aborts the process on a fuzzer-found program (tests/fuzz/
        # regressions/test_slp_vectorizer_abort.py); blur and harris ran no slower without.
        tuning.slp_vectorization = False
        self.pass_builder = llvm.create_pass_builder(self.machine, tuning)
        self.lock = threading.Lock()

    def new_machine(self) -> llvm.TargetMachine:
        return self._target.create_target_machine(cpu=self._cpu, features=self._features,
                                                  opt=3, jit=True)

    def parse(self, llvm_ir: str) -> llvm.ModuleRef:
        """`llvm_ir` parsed, verified, and set to the host's triple and data layout."""
        try:
            module = llvm.parse_assembly(llvm_ir)
            module.verify()
        except RuntimeError as error:
            raise InternalError(f"the LLVM backend generated invalid IR: {error}") from None
        module.triple = self.triple
        module.data_layout = self.data_layout
        return module


@cache
def _host() -> _HostTarget:
    return _HostTarget()


def jit_compile(llvm_ir: str) -> NativeModule:
    """Optimize `llvm_ir` at O3 for the host CPU and load it as executable code."""
    host = _host()
    with host.lock:
        module = host.parse(llvm_ir)
        # A module pass manager can run only once (a second run trips an LLVM assertion),
        # so each module gets a new one from the shared builder.
        pass_manager = host.pass_builder.getModulePassManager()
        pass_manager.run(module, host.pass_builder)
        _free_pass_manager(pass_manager)
        # Captured before MCJIT, whose code generation rewrites the module in place.
        optimized_ir = str(module)
        fixed_ir = split_single_lane_stores(optimized_ir)
        if fixed_ir != optimized_ir:
            module, optimized_ir = host.parse(fixed_ir), fixed_ir
        engine = llvm.create_mcjit_compiler(module, host.new_machine())
        emitted: list[bytes] = []
        engine.set_object_cache(lambda _, code: emitted.append(bytes(code)))
        engine.finalize_object()
    return NativeModule(optimized_ir, engine, b"".join(emitted))


def jit_load(optimized_ir: str, object_code: bytes) -> NativeModule:
    """Load machine code that `jit_compile` emitted before (from the on-disk cache), with
    no optimization or code generation. Raises `RuntimeError` if LLVM rejects it."""
    host = _host()
    with host.lock:
        engine = llvm.create_mcjit_compiler(host.parse(""), host.new_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
        engine.finalize_object()
    return NativeModule(optimized_ir, engine, object_code)


def host_fingerprint() -> tuple[str, str, str]:
    """The host's triple, CPU name and features: what the generated code is specific to."""
    host = _host()
    return host.triple, host._cpu, host._features


def _free_pass_manager(pass_manager: llvm.ModulePassManager) -> None:
    """Free a module pass manager now. llvmlite 0.50 never does: in ModulePassManager's MRO
    the no-op `ObjectRef._dispose` hides `NewPassManager._dispose`, which leaked ~70 KB per
    compiled function (measured over 2,000 compiles)."""
    llvm.NewPassManager._dispose(pass_manager)
    pass_manager.detach()


def host_assembly(llvm_ir: str) -> str:
    """The host assembly of an (already optimized) module, as the JIT compiles it."""
    host = _host()
    with host.lock:
        return host.machine.emit_assembly(host.parse(llvm_ir))
