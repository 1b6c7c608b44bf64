"""State shared by the lowering passes of one pipeline."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from halo.analysis.simplify import Simplifier
from halo.lang.environment import Environment
from halo.schedule.records import LoopLevel, PlacementKind
from halo.target import Target

if TYPE_CHECKING:  # the passes that define these import this module
    from halo.lower.bounds_inference import RegionCheck
    from halo.lower.sliding_window import SlidingWindow


@dataclass
class LowerContext:
    env: Environment
    target: Target = field(default_factory=Target)
    # Where each Func that is not inlined is computed and stored (outputs: root).
    compute_levels: dict[str, LoopLevel] = field(default_factory=dict)
    store_levels: dict[str, LoopLevel] = field(default_factory=dict)
    # For each (func, stage): loop name in the schedule -> name of the IR loop variable.
    loop_names: dict[tuple[str, int], dict[str, str]] = field(default_factory=dict)
    # IR loop variable -> the user's view of that loop, for error messages.
    loop_labels: dict[str, str] = field(default_factory=dict)
    # IR loop variable -> (Func, stage label, loop name): `f.update(0)`'s loop `x`.
    loop_owners: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    # What must hold before the code runs (filled by bounds_inference).
    checks: list[RegionCheck] = field(default_factory=list)
    # Funcs that reuse values across iterations of a loop, one window per compute site
    # that slides (filled by sliding_window).
    sliding_windows: dict[str, list[SlidingWindow]] = field(default_factory=dict)
    # The simplifier of the pipeline's simplify passes: they meet the same expressions,
    # and its memos save most of their work (benchmarks/compile_time.py).
    simplifier: Simplifier = field(default_factory=Simplifier)

    @property
    def outputs(self) -> list[str]:
        return [f.name for f in self.env.outputs]

    def realized(self) -> list[str]:
        """Funcs with storage of their own, in realization order (not inlined, not outputs)."""
        return [nm for nm, lvl in self.compute_levels.items()
                if lvl.kind is not PlacementKind.INLINE and nm not in self.outputs]

    def stage_prefix(self, func: str, stage: int) -> str:
        return f"{func}.s{stage}."
