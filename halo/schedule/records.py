"""Schedules as plain data.

A Func's `FuncSchedule` says where it is computed and stored, its scope, bounds and
estimates, and holds one `StageSchedule` per definition (pure first, then updates).
A `StageSchedule` is the list of loop transformations (`Split`, `Fuse`, `Reorder`;
they and their meaning are in `halo.analysis.loops`) applied in order, and the resulting
loops (`dims`, outermost first, each with its kind). Loop names are the bare names users
wrote (`"xo"`); lowering qualifies them as `f.s0.xo`.
Only `halo.lower.schedule_functions` turns these records into loops.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from halo.analysis.loops import Fuse, Reorder, Split, transformed_names
from halo.ir.nodes import Expr, ForKind


class PlacementKind(Enum):
    """Where a `LoopLevel` is: the Func inlined into its uses, at root, or at a loop."""
    INLINE = "inline"
    ROOT = "root"
    AT = "at"


class MemoryScope(Enum):
    """The memory a Func's buffer lives in (see `store_in`); `AUTO` lets halo choose."""
    AUTO = "auto"
    GLOBAL = "global"
    STACK = "stack"
    SHARED = "shared"
    LOCAL = "local"


class CacheKind(Enum):
    """Which verb made a cache Func: `cache_read` or `cache_write`."""
    READ = "read"
    WRITE = "write"


@dataclass
class Dim:
    """One loop of a stage. `pure` is False for loops over reduction variables."""
    name: str
    kind: ForKind = ForKind.SERIAL
    pure: bool = True


@dataclass(frozen=True)
class LoopCall:
    """One loop verb as the user called it on a stage (`tile`, `vectorize(x, 8)`, ...):
    loops by name, numbers as given, `kwargs` the options that differ from the default.
    `StageSchedule.calls` keeps them so a schedule prints back as written."""
    method: str
    args: tuple
    kwargs: tuple[tuple[str, object], ...] = ()


@dataclass
class StageSchedule:
    """`calls`: the loop verbs called on this stage, in order, as written (see
    `halo.schedule.as_written`); `dims` and `transforms` are what they did.
    `atomic` / `allow_races`: the user's permission to run reduction loops out of order
    (with atomic updates / as they come). `rfactor`: set on the merge stage an rfactor
    made, saying how it was made (see `RFactor`)."""
    dims: list[Dim]
    transforms: list[Split | Fuse | Reorder] = field(default_factory=list)
    atomic: bool = False
    allow_races: bool = False
    rfactor: RFactor | None = None
    # Schedules used instead of this one when their condition holds, tried in order.
    specializations: list[Specialization] = field(default_factory=list)
    tensorize: Tensorize | None = None
    calls: list[LoopCall] = field(default_factory=list)

    def dim_names(self) -> list[str]:
        return [d.name for d in self.dims]

    def variants(self) -> list[StageSchedule]:
        """This schedule and those of its specializations: every nest the stage may run."""
        return [self, *(spec.schedule for spec in self.specializations)]

    def find(self, name: str) -> Dim | None:
        return next((d for d in self.dims if d.name == name), None)

    def names_used(self) -> set[str]:
        """Every loop name this stage has ever had (names halo makes up avoid them)."""
        return set(self.dim_names()) | transformed_names(self.transforms)


@dataclass
class Specialization:
    """`f.specialize(condition)`: the stage runs with `schedule` when `condition` (a
    boolean halo Expr over Params and input extents) holds at run time."""
    condition: object
    schedule: StageSchedule


@dataclass(frozen=True)
class Tensorize:
    """The loop nest from loop `var` inward is replaced by tensor intrinsic `intrinsic`
    (its name); `declared` is the Intrinsic itself (None in a record read back from JSON
    before its calls are replayed)."""
    var: str
    intrinsic: str
    declared: object = field(default=None, compare=False)


@dataclass(frozen=True)
class CacheOrigin:
    """How a Func made by `cache_read`/`cache_write` came to be, so a schedule replays:
    which of them made it, the Func or input it caches, the scope, the readers named
    (None: every reader), and `seq`, the order of creation."""
    kind: CacheKind
    source: str
    scope: MemoryScope
    readers: tuple[str, ...] | None
    seq: int


@dataclass(frozen=True)
class InlineReduction:
    """A Func made by an inline reduction (`halo.sum(e)`, `maximum`, ...): the verb, and
    whether the user named it (`name=`; else halo did, and says where it came from).
    Unless placed, it is computed at the innermost loop of the one stage that uses it
    (see `halo.lower.realization`)."""
    verb: str
    named: bool


@dataclass(frozen=True)
class RFactor:
    """`rfactor(loop, var)` turned this update into a merge over `loop` of the Func
    `intermediate`, whose new pure dimension `var` stands for `loop`. `prior` is the
    update's schedule before the call (replayed first, so the same loops exist)."""
    loop: str
    var: str
    intermediate: str
    prior: StageSchedule


def stage_label(func: str, stage: int) -> str:
    """Stage `stage` of Func `func` as a user writes it: `f` (the pure definition, stage
    0), `f.update(0)` (the first update, stage 1), ..."""
    return func if stage == 0 else f"{func}.update({stage - 1})"


@dataclass(frozen=True)
class LoopLevel:
    """Where a Func is computed or stored: `inline`, `root`, or loop `var` of stage
    `stage` of Func `func`."""
    kind: PlacementKind
    func: str | None = None
    stage: int = 0
    var: str | None = None

    def __str__(self) -> str:
        if self.kind is not PlacementKind.AT:
            return self.kind.value
        return f"{stage_label(self.func, self.stage)} loop {self.var}"


INLINE = LoopLevel(PlacementKind.INLINE)
ROOT = LoopLevel(PlacementKind.ROOT)


@dataclass
class FuncSchedule:
    stages: list[StageSchedule] = field(default_factory=list)
    compute_level: LoopLevel | None = None  # None: the default (see lower.realization)
    store_level: LoopLevel | None = None    # None: same as the compute level
    # dimension -> the (min, extent) that bound() fixes, as IR (ints as int32 constants)
    bounds: dict[str, tuple[Expr, Expr]] = field(default_factory=dict)
    estimates: list[tuple[int, int]] | None = None
    memory_scope: MemoryScope = MemoryScope.AUTO
    # Copies of its buffer a GPU loop cycles through (`double_buffer(stages)`); 1: one.
    buffers: int = 1
    # Its dimensions in the order they are stored, outermost first (`reorder_storage`);
    # None: as defined (the last one contiguous).
    storage_order: tuple[str, ...] | None = None
    cache: CacheOrigin | None = None       # set on Funcs made by cache_read/cache_write
    inline_reduction: InlineReduction | None = None  # set on Funcs made by halo.sum, ...
