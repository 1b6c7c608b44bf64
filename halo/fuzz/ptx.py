"""CUDA C checked without a GPU: nvcc compiles it to PTX (`--target cuda --compile-only`
of the fuzzer, on machines with nvcc and no GPU)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from halo.errors import HaloError

PTX_ARCH = "sm_90"


def nvcc() -> str:
    """The nvcc on PATH; a HaloError where there is none."""
    found = shutil.which("nvcc")
    if found is None:
        raise HaloError("compiling CUDA C to PTX needs nvcc (the CUDA toolkit) on PATH")
    return found


def ptx_problem(source: str, arch: str = PTX_ARCH) -> str:
    """'' when nvcc compiles `source` to PTX for `arch`, else its messages."""
    with tempfile.TemporaryDirectory(prefix="halo_ptx_") as tmp:
        path = Path(tmp) / "kernels.cu"
        path.write_text(source)
        # -O0 in the front end: the check is that the code compiles, not how fast it runs.
        result = subprocess.run([nvcc(), "-ptx", f"-arch={arch}", "-Xcicc", "-O0", str(path),
                                 "-o", str(Path(tmp) / "kernels.ptx")],
                                capture_output=True, text=True, check=False)
    return "" if result.returncode == 0 else (result.stderr or result.stdout).strip()
