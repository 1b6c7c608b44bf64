"""Scheduling calls that only update stages have: the legality of running reduction
loops out of order (see `races.py`), `atomic()` and `allow_race_conditions()` (`rfactor`,
which makes a Func, is `Stage.rfactor` in `lang/func.py`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from halo.ir import nodes as n
from halo.ir.nodes import ForKind
from halo.ir.printer import expr_to_str
from halo.ir.visitor import walk
from halo.program import Definition
from halo.schedule.as_written import as_written
from halo.schedule.gpu import GPU_BINDINGS, warp_reduction_problem
from halo.schedule.races import (
    WAYS_OUT,
    distinct_points_problem,
    regroupings,
    self_read_problem,
)
from halo.schedule.records import Dim, StageSchedule
from halo.schedule.rfactor import LEGAL_FORMS, recognize, reduction_form, warp_point_loops
from halo.schedule.stage import Schedulable

if TYPE_CHECKING:
    from halo.lang.func import Func

U = TypeVar("U", bound="UpdateStage")  # a verb returns the stage it was called on

_OUT_OF_ORDER = {ForKind.PARALLEL: "in parallel", ForKind.VECTORIZED: "vectorized"}


class UpdateStage(Schedulable):
    """The schedule of update definition `index` (1 for the first) of `func`."""

    _is_update = True
    func: Func
    index: int

    def _definition(self) -> Definition:
        return self.func.definitions[self.index]

    def _reduction_order_problem(self, new_dims: list[Dim],
                                 sched: StageSchedule | None = None) -> str | None:
        sched = self._stage() if sched is None else sched
        d = self._definition()
        if sched.atomic or sched.allow_races or d.rdom is None:
            return None
        rvar_names = [r.name for r in d.rdom.rvars]
        rvars = set(rvar_names)

        def problem(vars_: frozenset[str], moving: set[str]) -> str | None:
            return self_read_problem(self.func.name, d.args, d.value, d.predicate) or \
                distinct_points_problem(self.func.name, d.args, rvars, vars_, moving)

        # every reordering so far, not only this call's: a warp reduction allows them
        # only while it lasts (a loop unbound later would run the float sum reordered)
        swaps, sources = regroupings([*d.pure_var_names(), *rvar_names], rvars,
                                     sched.transforms, new_dims)
        if swaps and (self._order_free() or self._warp_reduction(new_dims, sched)):
            swaps = []
        for a, b in swaps:
            why = problem(sources[a], rvars) and problem(sources[b], rvars)
            if why:
                return (f"this swaps the reduction loops {b} and {a}, but {why}. To allow "
                        f"it, use {WAYS_OUT}")
        for k, dim in enumerate(new_dims):
            if dim.kind not in _OUT_OF_ORDER or not sources[dim.name] & rvars:
                continue
            moving = set().union(*(sources[inner.name] for inner in new_dims[k:]))
            why = problem(sources[dim.name], moving)
            if why:
                return (f"running reduction loop '{dim.name}' {_OUT_OF_ORDER[dim.kind]} "
                        f"would race: {why}. To allow it, use {WAYS_OUT}")
        return None

    def _warp_point_loops(self, sched: StageSchedule | None = None) -> frozenset[str] | None:
        return warp_point_loops(self.func.name, self._definition(),
                                self._stage() if sched is None else sched)

    def _warp_reduction(self, dims: list[Dim], sched: StageSchedule) -> bool:
        """Whether `dims` bind a reduction loop to GPU threads as a warp reduction
        (`gpu.warp_reduction_problem`'s rule), which regroups the update's operations
        anyway (floats too, as rfactor does), so its reduction loops may be reordered."""
        bound = [d for d in dims if d.kind in GPU_BINDINGS and not d.pure]
        return bool(bound) and \
            warp_reduction_problem(dims, bound, self._warp_point_loops(sched)) is None

    def _order_free(self) -> bool:
        """Whether the update gives the same result in any order of its iterations: it is
        `f = f op e` (e free of f, f read nowhere else) with `op` exactly associative and
        commutative: + * & | ^ min max on integers, min max on floats (float sums and
        products round differently in another order)."""
        d = self._definition()
        form = reduction_form(self.func.name, d)
        if form is None:
            return False
        return not d.value.type.is_float or form[0] in ("minimum", "maximum",
                                                         "select minimum", "select maximum")

    @as_written
    def atomic(self: U) -> U:
        """Let this update's reduction loops run in parallel, vectorized or reordered by
        making each update of a point atomic (an LLVM `atomicrmw` for + - min max, a
        compare-and-swap loop otherwise). Call it before `parallel`/`vectorize`.

            for r in range(n):                 atomic().parallel(r)
              h[g[r]] = h[g[r]] + 1       ->   for r in parallel(n):
                                                 atomic: h[g[r]] = h[g[r]] + 1

        The update must read the Func only at the point it writes (an atomic operation
        covers one point), and combine it with an operator whose order doesn't matter
        (the forms rfactor accepts: + - * min max & | ^). A vectorized atomic update runs
        lane by lane.
        """
        d = self._definition()
        why = self_read_problem(self.func.name, d.args, d.value, d.predicate)
        if why:
            raise self._error("atomic", (), f"{why}; an atomic update reads and writes one "
                                            "point. Legal: rfactor(...) if the update is an "
                                            "associative reduction, or "
                                            ".allow_race_conditions() at your own risk")
        if not any(getattr(x, "name", None) == self.func.name for x in walk(d.value)):
            raise self._error("atomic", (), f"the update doesn't read {self.func.name}, so "
                                            "which write lands last decides the result and "
                                            "no atomic operation makes that deterministic. "
                                            "Legal: keep the reduction loops serial, or "
                                            ".allow_race_conditions() at your own risk")
        self_call = n.Call(d.value.type, self.func.name, d.args, n.CallKind.FUNC)
        if recognize(self.func.name, self_call, d.value) is None:
            raise self._error("atomic", (), f"the update {expr_to_str(self_call)} = "
                                            f"{expr_to_str(d.value)} gives a result that "
                                            "depends on the order of the updates, which "
                                            "atomics don't fix; atomic() needs "
                                            f"{LEGAL_FORMS.format(f=self.func.name)}. "
                                            "Legal: keep the reduction loops serial, or "
                                            ".allow_race_conditions() at your own risk")
        self._stage().atomic = True
        return self

    @as_written
    def allow_race_conditions(self: U) -> U:
        """Let this update's reduction loops run in parallel, vectorized or reordered
        even where halo can't show that the result stays the same: the user asserts it
        does (e.g. every point written gets the same value).

            for r in range(n):                 allow_race_conditions().parallel(r)
              f[g[r]] = 1                 ->   for r in parallel(n):
                                                 f[g[r]] = 1
        """
        self._stage().allow_races = True
        return self
