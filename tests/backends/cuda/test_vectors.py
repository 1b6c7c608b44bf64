"""Vectorized loops inside GPU threads (`backends/cuda/vectors.py`): lanes as scalar C,
dense accesses of up to 16 bytes, aligned by proof in shared memory and checked when
they run elsewhere. No GPU needed: tests/gpu runs the pipelines against halo.reference,
misaligned device arrays included."""
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import halo
from halo.backends.arguments import Argument
from halo.backends.cuda import aligned_promise, keeps_promise, vectors
from halo.backends.cuda.cuda_c import PRELUDE, KernelParam, kernel_source
from halo.ir import nodes as n
from halo.ir.types import float16, float32, int32

_spec = importlib.util.spec_from_file_location(
    "gpu_pipelines", Path(__file__).parents[2] / "gpu" / "gpu_pipelines.py")
gpu_pipelines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_pipelines)

CUDA = halo.Target("cuda", arch="sm_90")


def _source(name: str, twins: bool = False) -> str:
    """The general kernels of pipeline `name` (or their aligned twins)."""
    out, _, _ = gpu_pipelines.PIPELINES[name]()
    function = out.compile(target=CUDA).function
    return function.aligned_kernels_source if twins else function.kernels_source


@pytest.mark.parametrize("lanes, element_bytes, expected", [
    (4, 4, [(0, 4)]),
    (8, 4, [(0, 4), (4, 4)]),
    (3, 4, [(0, 2), (2, 1)]),
    (7, 4, [(0, 4), (4, 2), (6, 1)]),
    (4, 8, [(0, 2), (2, 2)]),
    (16, 1, [(0, 16)]),
    (8, 2, [(0, 8)]),
    (5, 2, [(0, 4), (4, 1)]),
])
def test_a_dense_vector_is_cut_into_accesses_of_at_most_16_bytes(lanes, element_bytes,
                                                                  expected):
    assert vectors.chunks(lanes, element_bytes) == expected


def _v(name):
    return n.Var(name, int32)


@pytest.mark.parametrize("index, lanes, proven", [
    (n.Mul(_v("t"), n.const(4)), 4, True),
    (n.Add(n.Mul(_v("t"), n.const(8)), n.const(4)), 4, True),
    (n.Add(n.Mul(_v("t"), n.const(8)), n.const(2)), 4, False),
    (n.Add(n.Mul(_v("t"), n.const(4)), _v("u")), 4, False),
    # the same unknown added and taken away
    (n.Sub(n.Add(n.Mul(_v("t"), n.const(4)), _v("u")), _v("u")), 4, True),
    # either side of a min, both multiples of 4 (a shifted tile's start)
    (n.Min(n.Mul(_v("t"), n.const(4)), n.const(60)), 4, True),
    (n.Min(n.Mul(_v("t"), n.const(4)), n.const(61)), 4, False),
    (n.Mul(n.Mul(_v("t"), n.const(2)), n.Mul(_v("u"), n.const(2))), 4, True),
])
def test_alignment_is_proven_from_the_index_structure(index, lanes, proven):
    assert vectors.divides(lanes, index, {}) is proven


def test_lets_are_replaced_by_their_values_before_the_proof():
    # x_min is a let equal to base, so x_min + 4t - base is 4t
    index = n.Sub(n.Add(_v("x_min"), n.Mul(_v("t"), n.const(4))), _v("base"))
    assert not vectors.divides(4, index, {})
    assert vectors.divides(4, index, {"x_min": _v("base")})


def test_global_accesses_are_checked_and_proven_shared_ones_are_not():
    source = _source("vectorized_shared")
    # the global input and output: any address, tested when it runs
    assert re.search(r"halo_copy_lanes<4, true>\(\w+, &inp\[", source)
    assert re.search(r"halo_copy_lanes<4, true>\(&out\[", source)
    # the shared stage, its start proven a multiple of 4 floats (128-byte aligned array)
    assert re.search(r"halo_copy_lanes<4, false>\(&f\[", source)
    assert re.search(r"halo_copy_lanes<4, false>\(\w+, &f\[", source)


def test_an_aligned_twin_drops_the_tests_its_promise_proves():
    general, twin = _source("vectorized_shared"), _source("vectorized_shared", twins=True)
    assert "halo_pipeline_k0(" in twin  # (the same name, in the aligned module)
    # inp's start, rows and tile offsets are multiples of 4 floats under the promise
    assert re.search(r"halo_copy_lanes<4, true>\(\w+, &inp\[", general)
    assert re.search(r"halo_copy_lanes<4, false>\(\w+, &inp\[", twin)
    assert not re.search(r"halo_copy_lanes<4, true>\(\w+, &inp\[", twin)


def test_a_kernel_without_global_vectors_has_no_twin():
    x, y, xo, yo, xi, yi = halo.vars("x y xo yo xi yi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    out = halo.Func("out")
    out[y, x] = inp[y, x] * 2
    out.gpu_tile(y, x, yo, xo, yi, xi, 4, 32)
    function = out.compile(target=CUDA).function
    assert function.aligned_source is None and function.aligned_kernels_source == ""


def test_the_promise_covers_every_buffer_and_its_fields_in_the_narrowest_elements():
    args = [Argument("A", "buffer", float16), Argument("C", "buffer", float32),
            *(Argument(name, "scalar", int32) for name in
              ("A.extent.1", "A.stride.0", "C.min.0", "C.extent.0")),
            Argument("scale", "scalar", float32)]
    promise = aligned_promise(args)
    # 16 bytes of float16: C's coordinates index A's columns too
    assert promise == {"A": 16, "C": 16, "A.extent.1": 8, "A.stride.0": 8, "C.min.0": 8,
                       "C.extent.0": 8}
    values = {"A": 4096, "C": 2**20, "A.extent.1": 64, "A.stride.0": 4096, "C.min.0": 0,
              "C.extent.0": 136, "scale": 0.5}
    assert keeps_promise(promise, values)
    for name, value in (("A", 4098), ("C", 2**20 + 8), ("A.stride.0", 4100),
                        ("C.min.0", -4), ("C.extent.0", 131)):
        assert not keeps_promise(promise, {**values, name: value})


def test_a_tail_under_a_predicate_goes_lane_by_lane():
    source = _source("vectorized")
    enabled = re.findall(r"const bool (out_enabled\w*_lane\d) =", source)
    assert len(enabled) == 4
    for lane in enabled:  # each lane's store and loads run only where it is enabled
        assert f"if ({lane}) out[" in source
        assert f"({lane} ? inp[" in source


def test_a_gather_goes_lane_by_lane():
    source = _source("vectorized_shared")
    consume = source[source.index("// consume f"):]
    lanes = re.search(r"float out_lanes\w*\[4\] = \{(.*)\};", consume)[1]
    # inp[y, 2 * x]: four loads of one element, at stride 2
    assert lanes.count("inp[") == 4
    for lane in (1, 2, 3):
        assert f") + {2 * lane}]" in lanes


def test_a_vector_let_is_a_variable_a_lane():
    """for t in threads(8): let v = inp[ramp(4t, 1, 4)] * 2 in out[ramp(4t, 1, 4)] = v + v"""
    f4 = float32.with_lanes(4)
    t = n.Var("t", int32)
    dense = n.Ramp(n.Mul(t, n.const(4)), n.const(1), 4)
    v = n.Var("v", f4)
    body = n.LetStmt("v", n.Mul(n.Load(f4, "inp", dense), n.Broadcast(n.const(2.0, float32), 4)),
                     n.Store("out", dense, n.Add(v, v)))
    loop = n.For("b", n.const(0), n.const(1), n.ForKind.GPU_BLOCK,
                 n.For("t", n.const(0), n.const(8), n.ForKind.GPU_THREAD, body))
    source = kernel_source("k", loop, [KernelParam("inp", float32, True, True),
                                       KernelParam("out", float32, True)], (8, 1, 1), 1)
    for lane in range(4):
        assert f"const float v_lane{lane} = inp_lanes_t1[{lane}] * 2.0f;" in source
    assert "= {v_lane0 + v_lane0, v_lane1 + v_lane1, v_lane2 + v_lane2, v_lane3 + v_lane3};" \
        in source


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name, instructions", [
    ("vectorized", ["ld.global.nc.v4.u32", "st.global.v4.f32"]),
    ("vectorized_shared", ["ld.shared.v4.f32", "st.shared.v4.f32", "st.global.v4.f32"]),
    ("vectorized_doubles", ["st.global.v2.f64"]),
    ("vectorized_halves", ["ld.global.nc.v4.u32", "st.global.v4.u32"]),
    ("vectorized_bytes", ["ld.global.nc.v4.u32", "st.global.v4.u32"]),
])
def test_dense_accesses_are_vector_instructions_in_registers(tmp_path, name, instructions):
    path = tmp_path / "k.cu"
    path.write_text(PRELUDE + _source(name))
    ptx = tmp_path / "k.ptx"
    subprocess.run([NVCC, "-ptx", "-arch=sm_90", "-O3", str(path), "-o", str(ptx)],
                   check=True, capture_output=True)
    text = ptx.read_text()
    for instruction in instructions:
        assert instruction in text, instruction
    assert ".local" not in text, "a vector's lanes went to local memory"


def test_a_call_runs_the_module_its_values_choose_building_each_once(monkeypatch):
    """The general and the aligned module are compiled the first time a call needs them
    (no GPU: the compiler and the loaded functions are stand-ins)."""
    import halo.backends.cuda as cuda_backend
    out, _, _ = gpu_pipelines.PIPELINES["vectorized_shared"]()
    pipeline = out.compile(target=CUDA).function
    compiled, launched = [], []

    class Function:
        def __init__(self, source):
            self.source = source

        def prepare(self, formats):
            pass

        def set_attribute(self, *args):
            pass

        def prepared_call(self, *args, **kwargs):
            launched.append(self.source)

    class Module:
        def __init__(self, source):
            self.source = source

        def get_function(self, name):
            return Function(self.source)

    monkeypatch.setattr(cuda_backend, "compile_cubin",
                        lambda source, *rest: compiled.append(source) or source)
    monkeypatch.setattr(cuda_backend, "load_module", Module)

    def values(address, rows, columns):
        v = {"inp": address, "out": 2**20, "inp.extent.0": rows, "inp.extent.1": 2 * columns,
             "inp.stride.0": 2 * columns, "out.min.0": 0, "out.min.1": 0,
             "out.extent.0": rows, "out.extent.1": columns, "out.stride.0": columns}
        return [v.get(a.name, 0) for a in pipeline.args]

    pipeline(*values(4096, 8, 64))  # aligned: the twins' module
    pipeline(*values(4096 + 4, 8, 64))  # a misaligned start: the general module
    pipeline(*values(4096, 8, 64))
    pipeline(*values(4096, 8, 70))  # 70 columns: not a multiple of 4 floats
    aligned, general = pipeline.aligned_source, pipeline.cuda_source
    assert compiled == [aligned, general]
    per_call = len(launched) // 4
    assert per_call and launched == ([aligned] * per_call + [general] * per_call) * 2
