"""Timing for the apps: the median wall-clock time of a callable, and the check-then-time
routine every app's `main()` runs."""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

WARM_S = 0.05


def warm_up(fn: Callable[[], object], seconds: float = WARM_S) -> None:
    """Call `fn` for `seconds` (at least once): right after an idle spell, a 2 ms kernel
    ran 3x slower in half its calls while the cores woke up; after 20 ms of work every
    call ran at full speed."""
    start = time.perf_counter()
    fn()
    while time.perf_counter() - start < seconds:
        fn()


def median_time(fn: Callable[[], object], repeats: int = 5) -> float:
    """Median seconds of `repeats` calls of `fn`, after `warm_up`."""
    warm_up(fn)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


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
