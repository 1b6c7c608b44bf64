"""A sum of products of uint8 values read from shared memory, which nvcc 13 miscompiled
(tests/backends/cuda/test_byte_loads.py): its answers on a GPU."""
import importlib.util
from pathlib import Path

import numpy as np

import halo

_spec = importlib.util.spec_from_file_location(
    "test_byte_loads", Path(__file__).parents[1] / "backends" / "cuda" / "test_byte_loads.py")
_byte_loads = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_byte_loads)


def test_a_sum_of_byte_products_in_shared_memory():
    out, in0 = _byte_loads.byte_products()
    a = np.random.default_rng(20261301000980).integers(0, 256, (9, 23)).astype("uint8")
    got = out.realize((1, 6), inputs={in0: a}, target="cuda")
    np.testing.assert_array_equal(got, halo.reference(out, (1, 6), inputs={in0: a}))
