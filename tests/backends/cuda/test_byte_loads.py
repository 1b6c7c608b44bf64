"""Bytes read from shared or local memory go through `halo_opaque_byte` (the CUDA
prelude): nvcc 13 merged two byte loads of a shared array 2 bytes apart, feeding a
dp2a, into one 32-bit load and used its 16-bit halves, so a sum of two products of
uint8 values counted bytes 1 and 3 too (found by `python -m halo.fuzz --target cuda
--seed 20261301`, program 20261301000980: wrong at 3 of 6 points). The GPU half (the
answers) is tests/gpu/test_nvcc_byte_loads.py."""
import re
import shutil
import subprocess

import pytest

import halo

NVCC = shutil.which("nvcc")


def byte_products():
    """sum over r of int32(b1[y, r]) * int32(b2[r, x]), uint8 values, b2 in a block's
    shared memory: the fuzzer's kernel."""
    y, x, xo, xi = halo.vars("y x xo xi")
    in0 = halo.ImageParam(halo.uint8, 2, "in0")
    b1, b2, out = halo.Func("b1"), halo.Func("b2"), halo.Func("out")
    b1[y, x] = halo.boundary.constant_exterior(in0, 5)[y, x]
    b2[y, x] = halo.boundary.repeat_edge(in0)[y, x]
    r = halo.RDom((0, 2), name="r")
    out[y, x] = halo.sum(halo.cast(halo.int32, b1[y, r.x]) * halo.cast(halo.int32, b2[r.x, x]))
    out.split(x, xo, xi, 2, tail="round_up").gpu_blocks(xo)
    b2.compute_at(out, xo)
    b1.compute_root().gpu_blocks(x)
    return out, in0


def test_shared_bytes_are_read_through_the_opaque_helper():
    out, _ = byte_products()
    source = out.compile(target=halo.Target("cuda", arch="sm_90")).function.kernels_source
    assert "halo_opaque_byte(b2[" in source
    assert "halo_opaque_byte(b1[" not in source  # (global memory: nvcc reads it right)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_no_wide_load_of_the_shared_bytes(tmp_path):
    out, _ = byte_products()
    (tmp_path / "k.cu").write_text(
        out.compile(target=halo.Target("cuda", arch="sm_90")).function.cuda_source)
    subprocess.run([NVCC, "-ptx", "-arch=sm_90", str(tmp_path / "k.cu"), "-o",
                    str(tmp_path / "k.ptx")], check=True, capture_output=True)
    ptx = (tmp_path / "k.ptx").read_text()
    loads = re.findall(r"ld\.shared\.(\S+)\s+[^,]+, \[\w*E2b2", ptx)
    assert loads and all(kind.endswith("u8") for kind in loads), loads
