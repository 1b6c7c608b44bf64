"""The thread loops of one stage stay one nest (the block's x, y, z axes) when code sits
between them: a Func computed at an outer thread loop runs in every thread of the inner
ones (fuse_gpu_thread_loops); a thread loop whose extent differs between virtual threads
runs as long as the longest (inject_virtual_threads)."""
import importlib.util
import re
from pathlib import Path

import halo
from halo.ir import nodes as n
from halo.ir.visitor import walk

_spec = importlib.util.spec_from_file_location(
    "gpu_pipelines", Path(__file__).parents[1] / "gpu" / "gpu_pipelines.py")
gpu_pipelines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_pipelines)


def test_a_producer_between_two_thread_loops_moves_inside_both():
    out, _, _ = gpu_pipelines.producer_at_outer_thread_loop()
    body = out.lower(halo.Target("cuda", arch="sm_90")).stmt
    threads = [x for x in walk(body) if isinstance(x, n.For) and x.kind is n.ForKind.GPU_THREAD]
    outer = [t for t in threads if t.name.endswith(".yi")]
    assert outer and all(isinstance(t.body, n.For) and t.body.kind is n.ForKind.GPU_THREAD
                         and t.body.name.endswith(".xi") for t in outer)
    source = out.compile(halo.Target("cuda", arch="sm_90")).function.kernels_source
    assert "out_s0_y_yi = (int)threadIdx.y" in source
    assert "out_s0_x_xi = (int)threadIdx.x" in source


def _thread_nests_are_whole(out) -> list[n.For]:
    body = out.lower(halo.Target("cuda", arch="sm_90")).stmt
    threads = [x for x in walk(body) if isinstance(x, n.For) and x.kind is n.ForKind.GPU_THREAD]
    return [t for t in threads if ".s0.y" in t.name and t.name.startswith("f.")]


def test_a_producer_thread_nest_in_a_vthread_loop_stays_one_nest():
    out, _, _ = gpu_pipelines.producer_in_vthread()
    outer = _thread_nests_are_whole(out)
    assert outer and all(isinstance(t.body, n.For) and t.body.kind is n.ForKind.GPU_THREAD
                         for t in outer)
    source = out.compile(halo.Target("cuda", arch="sm_90")).function.kernels_source
    assert re.search(r"f_s0_y = [^;]*threadIdx\.y;", source)
    assert re.search(r"f_s0_x = \(int\)threadIdx\.x;", source)
