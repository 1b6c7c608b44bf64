"""A sum of products of uint8 values read from shared memory, which nvcc 13 miscompiled
(tests/backends/cuda/test_byte_loads.py): its answers on a GPU."""
import numpy as np

import halo
from tests.backends.cuda.test_byte_loads import byte_products


def test_a_sum_of_byte_products_in_shared_memory():
    out, in0 = byte_products()
    a = np.random.default_rng(20261301000980).integers(0, 256, (9, 23)).astype("uint8")
    got = out.realize((1, 6), inputs={in0: a}, target="cuda")
    np.testing.assert_array_equal(got, halo.reference(out, (1, 6), inputs={in0: a}))
