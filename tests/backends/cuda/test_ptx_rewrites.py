"""PTX rewritten around ptxas defects (`halo/backends/cuda/ptx_rewrites.py`): each
`neg.s32` becomes a subtraction from an opaque zero, which ptxas can't fuse into its
three-input min/max (where it drops the negation). The GPU half (the answers) is
tests/gpu/test_ptxas_negated_max.py."""
import shutil
import subprocess

import pytest

import halo
from halo.backends.cuda.compiler import _assemble
from halo.backends.cuda.ptx_rewrites import opaque_negations

NVCC, PTXAS = shutil.which("nvcc"), shutil.which("ptxas")


def test_negations_become_subtractions_from_an_opaque_zero():
    ptx = ("\tmax.s32 \t%r43, %r42, 0;\n"
           "\tneg.s32 \t%r49, %r48;\n"
           "\t@%p1 neg.s32 %r7, %r6;\n"
           "\tneg.s64 \t%rd2, %rd1;\n"
           "\tneg.f32 \t%f2, %f1;\n")
    out = opaque_negations(ptx).splitlines()
    assert out[0] == "\tmax.s32 \t%r43, %r42, 0;"
    assert out[1] == ("\t{ .reg .b32 %halo_zero; mov.u32 %halo_zero, %dynamic_smem_size; "
                      "sub.s32 %r49, %halo_zero, %r48; }")
    assert out[2].endswith("@%p1 sub.s32 %r7, %halo_zero, %r6; }")
    assert out[3:] == ["\tneg.s64 \t%rd2, %rd1;", "\tneg.f32 \t%f2, %f1;"]  # not VIMNMX3's


def test_a_kernel_launched_with_dynamic_shared_memory_subtracts_it_from_its_zero():
    """%dynamic_smem_size is the bytes the launch gives: its kernel's zero takes them off;
    another kernel of the module, launched with none, keeps the plain register."""
    ptx = (".visible .entry big(\n{\n\tneg.s32 \t%r1, %r2;\n}\n"
           ".visible .entry small(\n{\n\tneg.s32 \t%r3, %r4;\n}\n")
    out = opaque_negations(ptx, {"big": 56832})
    assert ("mov.u32 %halo_zero, %dynamic_smem_size; sub.u32 %halo_zero, %halo_zero, 56832; "
            "sub.s32 %r1, %halo_zero, %r2; }") in out
    assert ("mov.u32 %halo_zero, %dynamic_smem_size; sub.s32 %r3, %halo_zero, %r4; }") in out
    assert out.count(".entry") == 2 and "neg.s32" not in out


def negated_window_max():
    """The kernel where ptxas dropped a negation: a max over a 2 x 5 window whose weight
    is -1 at one point (`python -m halo.fuzz --target cuda --seed 20261128`)."""
    c, y, x = halo.vars("c y x")
    inp = halo.ImageParam(halo.int32, 3, "inp")
    b = halo.boundary.repeat_edge(inp)
    r = halo.RDom((-1, 2), (-2, 5), name="r")
    out = halo.Func("out")
    out[c, y, x] = halo.maximum(b[c, y + r.x, x + r.y] * (r.x - r.y + 2))
    out.gpu_blocks(x)
    return out, inp


@pytest.mark.skipif(NVCC is None or PTXAS is None, reason="nvcc and ptxas are not installed")
def test_the_window_max_assembles_without_negations(tmp_path):
    out, _ = negated_window_max()
    source = out.compile(target=halo.Target("cuda", arch="sm_90")).function.cuda_source
    (tmp_path / "k.cu").write_text(source)
    subprocess.run([NVCC, "-ptx", "-arch=sm_90", str(tmp_path / "k.cu"), "-o",
                    str(tmp_path / "k.ptx")], check=True, capture_output=True)
    ptx = (tmp_path / "k.ptx").read_text()
    assert "neg.s32" in ptx
    rewritten = opaque_negations(ptx)
    assert "neg.s32" not in rewritten and "sub.s32" in rewritten
    assert _assemble(rewritten, "sm_90", [], source)[:4] == b"\x7fELF"
