"""The check-then-time routine every app's `main()` runs: the compiled kernel against
its NumPy version, first for equal results, then for speed (`halo.timing`)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from halo.timing import median_time


def check_and_time(app: str, size: str, kernel, out_shape: tuple[int, ...],
                   inputs: dict[str, np.ndarray], numpy_version: Callable[..., np.ndarray],
                   repeats: int, rtol: float = 1e-4, atol: float = 1e-6) -> dict:
    """Run the compiled `kernel` once and check it against `numpy_version(**inputs)`
    (exactly for integers), then time both. Returns the row the demo prints."""
    result = kernel(out_shape, **inputs)
    expected = numpy_version(**inputs)
    if np.issubdtype(result.dtype, np.floating):
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(result, expected)
    halo_s = median_time(lambda: kernel(out=result, **inputs), repeats)
    numpy_s = median_time(lambda: numpy_version(**inputs), repeats)
    return {"app": app, "size": size, "halo_s": halo_s, "halo_ms": halo_s * 1e3,
            "numpy_ms": numpy_s * 1e3}
