"""The Target: where a pipeline's code runs, and the facts about that machine that lowering
and the backends read.

A `Target` is a frozen value that lowering receives whole (`LowerContext.target`) and that
keys every compiled-code cache. Host facts (CPU name and features, SIMD width, core count)
are read here, once per process, from LLVM's description of the host CPU; no backend is
imported for them. The cache sizes (`host_cache_bytes`, for the autoscheduler's cost
model) come from Linux's sysfs.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import Enum
from functools import cache
from numbers import Integral
from pathlib import Path

from halo.errors import HaloError
from halo.ir.types import Type


class TargetKind(Enum):
    HOST = "host"   # the CPU this runs on, through LLVM
    CUDA = "cuda"   # an NVIDIA GPU, through CUDA C


@dataclass(frozen=True)
class HostCPU:
    """The CPU halo runs on: LLVM's name for it (`"sapphirerapids"`, `"znver4"`) and its
    features without the `+` (`"avx2"`, `"avx512f"`, `"fma"`, ...)."""
    name: str
    features: frozenset[str]

    @property
    def vector_bytes(self) -> int:
        """The width of the widest SIMD registers LLVM uses on this CPU."""
        return 64 if "avx512f" in self.features else 32 if "avx" in self.features else 16


@cache
def host_cpu() -> HostCPU:
    """The host CPU, as LLVM describes it (read once per process)."""
    # llvmlite is imported on first use, so that `import halo` loads no LLVM.
    import llvmlite.binding as llvm
    flags = llvm.get_host_cpu_features().flatten().split(",")
    return HostCPU(llvm.get_host_cpu_name(),
                   frozenset(f[1:] for f in flags if f.startswith("+")))


DEFAULT_CACHE_BYTES = (32 << 10, 1 << 20, 16 << 20)  # L1 data, L2, L3 where not told


@cache
def host_cache_bytes() -> tuple[int, int, int]:
    """(L1 data, L2, L3) bytes of the host's first CPU, from Linux's sysfs; a level it
    doesn't tell (another OS, a VM that hides it) has its `DEFAULT_CACHE_BYTES` size."""
    found = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:])
        if kind != "Instruction" and scale is not None and size[:-1].isdigit():
            found[level] = int(size[:-1]) * scale
    return tuple(found.get(k, d) for k, d in zip((1, 2, 3), DEFAULT_CACHE_BYTES,
                                                   strict=True))


# The most threads a parallel loop may run on: OpenMP's runtime allocates per-thread state
# up front, so a huge count exhausts memory (and LLVM's i32 argument would wrap past 2**31).
MAX_THREADS = 1024


def _thread_count_problem(threads: object) -> str | None:
    """Why `threads` is not a thread count halo accepts, or None if it is."""
    if isinstance(threads, bool) or not isinstance(threads, Integral):
        return f"is a {type(threads).__name__}, not an integer"
    if threads < 1:
        return "is not positive"
    if threads > MAX_THREADS:
        return f"is more than {MAX_THREADS}, the most halo runs a parallel loop on"
    return None


def default_num_threads() -> int:
    """The thread count when none is given: HALO_NUM_THREADS if set, else every core (at
    most MAX_THREADS)."""
    setting = os.environ.get("HALO_NUM_THREADS", "").strip()
    if not setting:
        return min(os.cpu_count() or 1, MAX_THREADS)
    problem = "is not an integer" if not setting.isdigit() else \
        _thread_count_problem(int(setting))
    if problem is not None:
        raise HaloError(f"HALO_NUM_THREADS={setting!r} {problem}; set it to the number of "
                        f"threads for parallel loops (1 to {MAX_THREADS}), or unset it to "
                        "use every core")
    return int(setting)


_ARCH = re.compile(r"sm_(\d)(\d)a?")
# The oldest architecture the CUDA backend generates code for (Volta: independent thread
# scheduling, 64-bit atomicAdd on doubles, 96 KB shared memory).
MIN_CUDA_ARCH = 70


def _checked_arch(arch: object) -> str:
    """`arch` ("sm_90"), or the compute capability of the current CUDA device when None."""
    if arch is None:
        arch = cuda_device_arch()
    if not isinstance(arch, str) or not _ARCH.fullmatch(arch) or \
            int(arch[3:5]) < MIN_CUDA_ARCH:
        raise HaloError(f"Target('cuda', arch={arch!r}): arch names an NVIDIA GPU "
                        f"architecture as 'sm_XY' with XY at least {MIN_CUDA_ARCH} (such as "
                        "'sm_80' or 'sm_90'), or is None to read it from the GPU")
    return arch


@cache
def cuda_device_arch() -> str:
    """The architecture ("sm_90") of CUDA device 0, read through PyCUDA (once per
    process). Without PyCUDA or a device, a HaloError that says to name the arch."""
    try:
        # PyCUDA is optional (the halo[cuda] extra): imported only when a GPU is asked for.
        import pycuda.driver as cuda
    except ImportError:
        raise HaloError("Target('cuda') reads the GPU's architecture through PyCUDA, which "
                        "is not installed (pip install 'halo[cuda]'); to generate CUDA code "
                        "without a GPU, name the architecture: Target('cuda', "
                        "arch='sm_90')") from None
    try:
        cuda.init()
        major, minor = cuda.Device(0).compute_capability()
    except cuda.Error as e:
        raise HaloError(f"Target('cuda'): no CUDA device could be opened ({e}); to generate "
                        "CUDA code without a GPU, name the architecture: Target('cuda', "
                        "arch='sm_90')") from None
    return f"sm_{major}{minor}"


@dataclass(frozen=True)
class Target:
    """Where code runs: `"host"` (the CPU, through LLVM) or `"cuda"`.

    `threads`: the size of the thread pool for parallel loops, an integer from 1 to
    MAX_THREADS (1024) (default: HALO_NUM_THREADS, else all cores). `count_stores=True`
    builds instrumented code that counts the values stored to each Func, read after a call
    as `kernel.store_counts` ({func name: count}); all its loops run serially, so the
    counts are exact (see halo/lower/count_stores.py).
    `strict_float=True` rounds every float operation separately, as NumPy does; by default
    `a * b + c` may be computed as one fused multiply-add (as Halide does). `arch`: the GPU
    architecture to generate code for (`"sm_90"`), for `"cuda"` only. `fast_math=True`
    (`"cuda"` only) lets the GPU approximate, as nvcc's `--use_fast_math` does: `exp`,
    `log`, `pow`, `sin` and `cos` through its special-function unit (`exp(x)` within
    2 + 1.2 |x| ulp of the exact value, where it was within 2; `sin` and `cos` within
    2**-21.4 absolute on [-pi, pi], more outside), `tanh` within 2**-11 relative, float
    division and square roots to about 2 ulp, denormals flushed to zero.
    """
    kind: TargetKind | str = TargetKind.HOST
    threads: int | None = None
    count_stores: bool = False
    strict_float: bool = False
    arch: str | None = None
    fast_math: bool = False

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", TargetKind(self.kind))
        except ValueError:
            raise HaloError(f"unknown target {self.kind!r}; use 'host' or 'cuda'") from None
        if self.kind is TargetKind.CUDA:
            object.__setattr__(self, "arch", _checked_arch(self.arch))
        elif self.arch is not None:
            raise HaloError(f"Target({self.kind.value!r}, arch={self.arch!r}): arch is for "
                            "GPU targets; the host's CPU is read from the machine")
        if self.fast_math and self.kind is not TargetKind.CUDA:
            raise HaloError(f"Target({self.kind.value!r}, fast_math=True): approximate math is "
                            "for GPU targets (Target('cuda', fast_math=True)); on the host, "
                            "exp and division are always computed to within an ulp or two")
        if self.fast_math and self.strict_float:
            raise HaloError("Target('cuda', strict_float=True, fast_math=True): strict_float "
                            "rounds every operation as NumPy does, fast_math approximates "
                            "them; choose one")
        if self.kind is TargetKind.CUDA and self.count_stores:
            raise HaloError("Target('cuda', count_stores=True): counting stores runs every "
                            "loop serially, which only the host target does; count them "
                            "with Target('host', count_stores=True)")
        problem = None if self.threads is None else _thread_count_problem(self.threads)
        if problem is not None:
            raise HaloError(f"Target(threads={self.threads!r}): threads must be a positive "
                            f"integer, at most {MAX_THREADS}, or None for the default; "
                            f"{self.threads!r} {problem}")
        if self.threads is not None:
            object.__setattr__(self, "threads", int(self.threads))

    @property
    def name(self) -> str:
        """The kind as a string: "host" or "cuda"."""
        return self.kind.value

    @property
    def cpu(self) -> HostCPU:
        """The CPU that host code is generated for (the one this runs on)."""
        return host_cpu()

    def has_feature(self, feature: str) -> bool:
        """Whether the target CPU has `feature` (LLVM's name: "avx2", "avx512vnni", ...)."""
        return self.kind is TargetKind.HOST and feature in self.cpu.features

    @property
    def num_threads(self) -> int:
        """The threads parallel loops run on: `threads`, or the default."""
        return self.threads or default_num_threads()

    def natural_vector_size(self, t: Type) -> int:
        """How many values of type `t` one SIMD register holds on this target (16 float32
        with AVX-512, 8 with AVX2), as in Halide: what a schedule vectorizes by to fill
        the machine's vectors."""
        return max(1, self.cpu.vector_bytes // t.bytes)

    @staticmethod
    def of(target: str | Target) -> Target:
        return target if isinstance(target, Target) else Target(target)
