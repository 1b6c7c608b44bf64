"""Schedules as plain data, the user-facing methods that record them, and their
serialization (JSON, and halo source code)."""
from halo.schedule.placement import FuncPlacement
from halo.schedule.records import (
    INLINE,
    ROOT,
    Dim,
    FuncSchedule,
    Fuse,
    LoopLevel,
    Reorder,
    Split,
    StageSchedule,
)
from halo.schedule.stage import Schedulable, loop_name

__all__ = ["FuncPlacement", "Schedulable", "loop_name", "INLINE", "ROOT", "Dim",
           "FuncSchedule", "Fuse", "LoopLevel", "Reorder", "Split", "StageSchedule"]
