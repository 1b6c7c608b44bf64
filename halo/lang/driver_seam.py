"""Where `f.realize()`, `f.compile()`, `f.lower()` and `f.print_loop_nest()` find the
driver that lowers, compiles and runs pipelines. The driver sits above the language and
installs itself here when `halo` is imported (`install_pipeline`), so the language never
imports it."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from halo.errors import InternalError

if TYPE_CHECKING:
    from halo.driver import Pipeline
    from halo.lang.func import Func

_make_pipeline: Callable[[Sequence[Func]], Pipeline] | None = None


def install_pipeline(make_pipeline: Callable[[Sequence[Func]], Pipeline]) -> None:
    """Make `make_pipeline(outputs)` the way a Func builds the pipeline it runs in."""
    global _make_pipeline
    _make_pipeline = make_pipeline


def pipeline(outputs: Sequence[Func]) -> Pipeline:
    """The driver's pipeline of `outputs`."""
    if _make_pipeline is None:
        raise InternalError("no halo driver is installed; import halo")
    return _make_pipeline(outputs)
