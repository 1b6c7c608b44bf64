"""tests/gpu run on an NVIDIA GPU through PyCUDA and skip cleanly without one."""
import importlib.util

import pytest


def _gpu_problem() -> str | None:
    if importlib.util.find_spec("pycuda") is None:
        return "PyCUDA is not installed"
    try:
        import pycuda.driver as cuda
        cuda.init()
        if cuda.Device.count() == 0:
            return "no CUDA device"
    except Exception as e:  # noqa: BLE001 (any driver failure means: no usable GPU)
        return f"no usable CUDA device ({e})"
    return None


_PROBLEM = _gpu_problem()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)
            if _PROBLEM is not None:
                item.add_marker(pytest.mark.skip(reason=_PROBLEM))
