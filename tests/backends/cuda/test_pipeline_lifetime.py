"""A CudaPipeline dropped on a thread other than the one that loaded its modules keeps
them for that thread's next call (PyCUDA unloads a module only where its context is
current); checked without a GPU, with stand-ins for the modules and the launches."""
import copy
import gc
import threading
import weakref

import halo
from halo.backends import cuda


class _Module:
    """Stands in for a loaded module: what must outlive the pipeline, on its thread."""


def _pipeline():
    x = halo.Var("x")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x] * 2
    xo, xi = halo.vars("xo xi")
    f.gpu_tile(x, xo, xi, 32)
    return f.compile(halo.Target("cuda", arch="sm_90")).function


def _loaded_copy(pipeline, module: _Module, thread: int):
    p = copy.copy(pipeline)
    p._modules, p._functions, p._loaded_in = [module], {False: []}, thread
    p._host = lambda *args: None  # no launches
    return p


def test_a_pipeline_dropped_on_another_thread_leaves_its_modules_to_the_loading_thread():
    module = _Module()
    alive = weakref.ref(module)
    pipelines = [_loaded_copy(_pipeline(), module, threading.get_ident())]
    del module
    thread = threading.Thread(target=pipelines.clear)
    thread.start()
    thread.join()
    gc.collect()
    assert alive() is not None  # kept for this thread
    other = _pipeline()
    other._host = lambda *args: None
    other(*([0] * len(other.args)))  # this thread's next call drops them
    gc.collect()
    assert alive() is None
    assert threading.get_ident() not in cuda._orphans


def test_a_pipeline_dropped_on_its_own_thread_unloads_at_once():
    module = _Module()
    alive = weakref.ref(module)
    pipelines = [_loaded_copy(_pipeline(), module, threading.get_ident())]
    del module
    pipelines.clear()
    gc.collect()
    assert alive() is None
    assert threading.get_ident() not in cuda._orphans
