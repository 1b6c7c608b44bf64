"""A training pipeline as the search sees it, and search states as JSON.

`training_pipeline(seed, profile, machine)` draws the random pipeline, builds its Funcs
(in a fresh `NameScope`, so a rebuild names them alike), models it at its sizes and
makes the search's starting states (the plain pipeline and its rfactor rewrites). A
sample stores its state as `state_json` (which start, the Funcs moved to a local cache
stage, one `Decision` per Func), so `state_from_json` rebuilds it and the features can
be recomputed after they change, without measuring again; and the schedule measured
(`schedule_json`), so a sample whose state makes another schedule today (the
schedule calls a state makes changed) is known to be stale.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from halo.autoschedule.algorithm import Algorithm
from halo.autoschedule.emit import schedule_calls
from halo.autoschedule.features import cost_terms, stage_features
from halo.autoschedule.loop_nest import nests
from halo.autoschedule.reductions import rfactor_variants
from halo.autoschedule.search import Machine, State
from halo.autoschedule.space import Decision, Nest, Placement
from halo.autoschedule.validate import Snapshot, apply_calls
from halo.lang.environment import Environment
from halo.lang.names import NameScope
from halo.random_programs.pipeline_spec import BuiltPipeline, RandomPipeline
from halo.random_programs.random_pipeline import random_pipeline
from halo.random_programs.size_profile import SizeProfile
from halo.schedule.calls import Call
from halo.schedule.serialize import schedules_to_json


@dataclass
class TrainingPipeline:
    spec: RandomPipeline
    built: BuiltPipeline
    machine: Machine
    starts: list[State]

    @property
    def fingerprint(self) -> str:
        """A hash of the drawn pipeline (its source and sizes): a sample whose pipeline
        no longer draws the same is not used."""
        p = self.spec
        text = p.source() + repr((p.output_shape, p.output_origin,
                                  [(i.name, i.dtype, i.shape) for i in p.inputs]))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def training_pipeline(seed: int, profile: SizeProfile, cores: int, vector_bytes: int,
                      cache_bytes: tuple[int, int, int]) -> TrainingPipeline:
    """The pipeline `seed` of `profile`, modelled for a machine of `cores` threads whose
    vectors are `vector_bytes` wide."""
    spec = random_pipeline(seed, profile=profile)
    with NameScope():
        built = spec.build()
    outputs = [built.output]
    boxes = {i.name: tuple((0, s - 1) for s in i.shape) for i in spec.inputs}
    out_box = {built.output.name: tuple((o, o + s - 1) for o, s in
                                        zip(spec.output_origin, spec.output_shape,
                                            strict=True))}

    def model() -> Algorithm:
        return Algorithm.of(Environment.of(outputs), boxes, out_box, {})

    alg = model()
    lanes = max(max(1, vector_bytes // f.type.bytes)
                for f in Environment.of(outputs).funcs.values())
    machine = Machine(cores, lanes, cache_bytes)
    variants = rfactor_variants(alg, outputs, cores, lanes, model)
    starts = [State(alg), *(State(a, prefix=calls) for calls, a in variants)]
    return TrainingPipeline(spec, built, machine, starts)


def terms_of(state: State, machine: Machine):
    """The cost terms (`features.TERMS`) of a complete state."""
    decided = state.decided
    features = stage_features(state.alg, decided, nests(state.alg, decided), machine.cores,
                              machine.lanes, machine.cache_bytes)
    return cost_terms(features, machine.cores, machine.lanes)


def calls_of(state: State) -> list[Call]:
    """The schedule calls a complete state makes."""
    return list(state.prefix) + schedule_calls(state.alg, state.decided, state.locals_,
                                               nests(state.alg, state.decided))


def schedule_json(tp: TrainingPipeline, state: State) -> str:
    """The schedule a complete state makes, as halo's JSON records (compact): what is
    measured, and what a stored sample's state must still make for its time to count."""
    outputs = [tp.built.output]
    snapshot = Snapshot(outputs)
    try:
        apply_calls(outputs, calls_of(state))
        env = Environment.of(outputs)
        text = schedules_to_json({n: g.schedule for n, g in env.funcs.items()})
    finally:
        snapshot.restore()
    return json.dumps(json.loads(text), separators=(",", ":"))


def state_json(tp: TrainingPipeline, state: State) -> dict:
    start = next(k for k, s in enumerate(tp.starts) if s.prefix == state.prefix)
    return {"start": start, "locals": list(state.locals_), "panels": state.alg.panel_readers(),
            "decisions": [[name, asdict(d)] for name, d in state.decisions]}


def state_from_json(tp: TrainingPipeline, data: dict) -> State:
    """The state `state_json` wrote, on the same pipeline."""
    start = tp.starts[data["start"]]
    alg = start.alg
    for name in data["locals"]:
        alg = alg.with_local(name)
    for reader in data.get("panels", ()):  # samples older than packed panels have none
        alg = alg.with_panels(reader)
    decisions = []
    for name, d in data["decisions"]:
        nest = d["nest"]
        if nest is not None:
            nest = Nest(**{**nest, "tiles": tuple(nest["tiles"])})
        decisions.append((name, Decision(Placement(**d["placement"]), nest)))
    return State(alg, tuple(decisions), tuple(data["locals"]), start.prefix)
