"""User errors (`HaloError` and its subclasses) versus compiler bugs (`InternalError`).

Every message a user reads names the Func, the call that caused the problem, and what
would be legal.
"""


class HaloError(Exception):
    """A mistake in the user's program or schedule."""


class DefinitionError(HaloError, TypeError):
    """An ill-formed algorithm: a bad definition, index count, or type."""


class ScheduleError(HaloError):
    """A schedule call that can't be honored."""


class BoundsError(HaloError):
    """An access outside what an input or output provides, or one halo can't bound."""


class InputError(HaloError):
    """Wrong, missing or ill-typed inputs at run time."""


class InternalError(Exception):
    """A bug in halo, never the user's fault."""

    def __init__(self, message: str):
        super().__init__(f"{message}\n(this is a bug in halo; please report it with the "
                         "program that triggered it)")


def input_bounds_error(name: str, dim: int, lo: int, hi: int, extent: int,
                       what: str = "input") -> BoundsError:
    """The error for reading (or, for outputs, writing) outside an array: names the
    array, the dimension, the accessed range and the available one."""
    if lo <= -2**31 or hi >= 2**31 - 1:
        return BoundsError(
            f"{what} {name} is accessed at [{lo}, {hi}] in dimension {dim} (outermost is 0):"
            " that range reaches int32's limits, so halo couldn't bound an index there (one "
            "computed through a wrapping type, or data-dependent); clamp it "
            f"(halo.clamp(index, 0, {extent - 1})) or read {name} through a boundary "
            "condition (halo.boundary.repeat_edge)")
    return BoundsError(
        f"{what} {name} is accessed at [{lo}, {hi}] in dimension {dim} (outermost is 0), "
        f"but only [0, {extent - 1}] exists (extent {extent}); pass a larger array, shrink "
        "the output, or read it through a boundary condition (halo.boundary.repeat_edge)")
