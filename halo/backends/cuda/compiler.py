"""CUDA C to a loaded module: nvcc (through PyCUDA) to PTX, the PTX rewritten around
ptxas defects (`ptx_rewrites.py`), ptxas to a cubin, with an on-disk cache of the cubins.

A cubin is cached like the host's machine code (`llvm/object_cache.py`: the same
directory, `$HALO_CACHE_DIR`, trust rules and entry format; its text part is the CUDA
source, compared on load), keyed by the source, the architecture, the nvcc options, halo's
version and this backend's sources. An nvcc or ptxas error is an InternalError (the code
is halo's) that shows the generated source.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from halo.backends.cuda.device import cuda_compiler, cuda_driver
from halo.backends.cuda.ptx_rewrites import opaque_negations
from halo.backends.llvm import object_cache
from halo.errors import InternalError
from halo.version import __version__


def nvcc_options(strict_float: bool, fast_math: bool = False) -> list[str]:
    """nvcc's options: IEEE division and square roots (nvcc's default) and CUDA's accurate
    math functions, unless `fast_math` (Target's: approximations, denormals flushed); no
    fused multiply-adds with `strict_float`."""
    return ["--fmad=false"] if strict_float else ["--use_fast_math"] if fast_math else []


# Of nvcc's options, those ptxas takes too (--use_fast_math acts on the PTX nvcc writes).
_PTXAS_OPTIONS = frozenset({"--fmad=false"})


# Generated kernels may declare what they end up not using (a let of one vthread copy,
# a shared array of a partitioned loop's copy whose reads folded away): nvcc's notes on
# that (#177 declared but never referenced, #550 set but never used) aren't the user's to
# act on, so they don't reach them as warnings. Front end only: they don't change the code.
_QUIET = ["--diag-suppress=177,550"]


@cache
def _backend_fingerprint() -> str:
    digest = hashlib.sha256(__version__.encode())
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def cache_key(source: str, arch: str, options: list[str]) -> str:
    digest = hashlib.sha256(_backend_fingerprint().encode())
    for part in (arch, " ".join(options), source):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part.encode())
    return digest.hexdigest()


def compile_cubin(source: str, arch: str, options: Sequence[str] = (),
                  dynamic_shared: dict[str, int] | None = None) -> bytes:
    """The cubin of `source` for `arch` with nvcc's `options` (`nvcc_options`), from the
    disk cache when it was compiled before; `dynamic_shared`: the shared memory each
    kernel (by name) is launched with, past 48 KB."""
    options = list(options)
    key = cache_key(source + repr(sorted((dynamic_shared or {}).items())), arch, options)
    entry = object_cache.load(key)
    if entry is not None and entry[0] == source:
        return entry[1]
    compiler = cuda_compiler()
    try:
        ptx = compiler.compile(source, options=options + _QUIET, arch=arch, no_extern_c=True,
                               cache_dir=False, target="ptx")
    except cuda_driver().CompileError as e:
        raise InternalError(f"nvcc refused the CUDA C halo generated ({e}); the source:\n"
                            f"{source}") from None
    cubin = _assemble(opaque_negations(ptx.decode(), dynamic_shared), arch, options, source)
    object_cache.store(key, source, cubin)
    return cubin


def _assemble(ptx: str, arch: str, options: list[str], source: str) -> bytes:
    """ptxas: `ptx` to a cubin for `arch` (nvcc's options apply to it too)."""
    nvcc = shutil.which("nvcc")
    ptxas = shutil.which("ptxas") or (nvcc and str(Path(nvcc).parent / "ptxas"))
    if not ptxas or not Path(ptxas).exists():
        raise InternalError("ptxas (the CUDA toolkit's, beside nvcc) is not on PATH")
    with tempfile.TemporaryDirectory(prefix="halo_ptxas_") as tmp:
        ptx_path, cubin_path = Path(tmp) / "kernels.ptx", Path(tmp) / "kernels.cubin"
        ptx_path.write_text(ptx)
        ptxas_options = [o for o in options if o in _PTXAS_OPTIONS]
        result = subprocess.run([ptxas, f"-arch={arch}", *ptxas_options, str(ptx_path), "-o",
                                 str(cubin_path)], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise InternalError(f"ptxas refused the PTX of the CUDA C halo generated "
                                f"({(result.stderr or result.stdout).strip()}); the source:\n"
                                f"{source}")
        return cubin_path.read_bytes()


def load_module(cubin: bytes):
    """The cubin loaded into the current context (a `pycuda.driver.Module`)."""
    return cuda_driver().module_from_buffer(cubin)
