"""The sizes random pipelines are drawn at: a `SizeProfile` per use.

`FUZZ` (the default) draws small and awkward sizes (1, primes, sizes no split factor
divides), so the fuzzer's pipelines compile and run in milliseconds and hit every tail
case. `REALISTIC` draws the sizes a cost model is trained at: image sides 64-2048 (some
that no power of two divides), more channels, reduction extents up to hundreds, with
every input and the output sharing one image size (as in real pipelines) and the output
capped at `max_points` so that one run stays in the milliseconds.
"""
from __future__ import annotations

from dataclasses import dataclass

AWKWARD_SIZES = (1, 2, 3, 5, 6, 7, 9, 11, 13, 16, 17, 19, 23)


@dataclass(frozen=True)
class SizeProfile:
    """The choices a pipeline's sizes are drawn from."""
    name: str
    sides: tuple[int, ...]       # an image's height or width
    extents: tuple[int, ...]     # a reduction's extent, a histogram's or scatter's region
    channels: tuple[int, ...]
    shared_image: bool = False   # inputs and output share one (height, width)
    max_points: int = 0          # with `shared_image`: channels x height x width at most


FUZZ = SizeProfile("fuzz", tuple(s for s in AWKWARD_SIZES if s <= 23),
                   tuple(s for s in AWKWARD_SIZES if s <= 12), (1, 2, 3, 4))
REALISTIC = SizeProfile(
    "realistic",
    (64, 100, 128, 192, 256, 320, 384, 500, 512, 640, 768, 1000, 1024, 1536, 2048),
    (8, 16, 25, 32, 64, 100, 128, 200, 256), (1, 3, 4, 8, 16),
    shared_image=True, max_points=1 << 20)
PROFILES = {p.name: p for p in (FUZZ, REALISTIC)}
