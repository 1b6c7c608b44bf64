"""Reduction schedules (rfactor, atomic, allow_race_conditions) round-trip through halo
source and JSON: re-applied to a freshly defined algorithm they lower to the same IR."""
from __future__ import annotations

import pytest

import halo
from halo.lang.environment import Environment
from halo.lang.schedule_files import apply_json, schedule_to_json

b, u, ro, ri = halo.vars("b u ro ri")


def histogram():
    image = halo.ImageParam(halo.uint8, 2, "image")
    r = halo.RDom(image, name="r")
    hist = halo.Func("hist")
    hist[b] = halo.cast(halo.int32, 0)
    hist[halo.cast(halo.int32, image[r.x, r.y])] += 1
    return hist


def scaled_total():
    """total[()] = sum of scaled = 2 * inp, with scaled a Func of its own."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom(inp, name="r")
    y, x = halo.vars("y x")
    scaled, total = halo.Func("scaled"), halo.Func("total")
    scaled[y, x] = inp[y, x] * 2.0
    total[()] = 0.0
    total[()] += scaled[r.x, r.y]
    return total


def _rdom(out):
    return next(d.rdom for f in Environment.of([out]).funcs.values()
                for d in f.definitions if d.rdom is not None)


def _hist_rfactor(hist):
    r = _rdom(hist)
    hist.vectorize(b, 8)
    hist.update(0).split(r.x, ro, ri, 7)
    intm = hist.update(0).rfactor(ro, u)
    intm.compute_root().vectorize(b, 8).update(0).parallel(u)
    hist.update(0).reorder(ro, b).vectorize(b, 8)


def _hist_atomic(hist):
    r = _rdom(hist)
    hist.update(0).atomic().split(r.x, ro, ri, 16).parallel(ro).vectorize(r.y, 4)


def _total_named_rfactor(total):
    r = _rdom(total)
    partials = total.update(0).rfactor(r.y, u, name="partials")
    partials.compute_root().update(0).reorder(r.x, u).vectorize(u, 4)


def _total_producer_at_intermediate(total):
    r = _rdom(total)
    total.update(0).allow_race_conditions()
    intm = total.update(0).rfactor(r.x, u)
    intm.compute_root().update(0).parallel(u)
    Environment.of([total]).funcs["scaled"].compute_at(intm.update(0), u)


CASES = [(histogram, _hist_rfactor), (histogram, _hist_atomic),
         (scaled_total, _total_named_rfactor), (scaled_total, _total_producer_at_intermediate)]
IDS = [s.__name__.strip("_") for _, s in CASES]


def _namespace(out) -> dict:
    """What a user's script has in scope: halo, and the Funcs and RDoms by name."""
    env = Environment.of([out])
    return {"halo": halo, **env.funcs, "r": _rdom(out)}


@pytest.mark.parametrize("make,schedule", CASES, ids=IDS)
def test_schedule_source_round_trip(make, schedule):
    """The printed schedule, run against a fresh algorithm, lowers to the same IR."""
    out = make()
    schedule(out)
    source = halo.schedule_source(out)
    fresh = make()
    exec(source, _namespace(fresh))
    assert str(fresh.lower()) == str(out.lower())


@pytest.mark.parametrize("make,schedule", CASES, ids=IDS)
def test_schedule_json_round_trip(make, schedule):
    out = make()
    schedule(out)
    fresh = make()
    apply_json(fresh, schedule_to_json(out))
    assert str(fresh.lower()) == str(out.lower())
    assert schedule_to_json(fresh) == schedule_to_json(out)


def test_rfactor_source_reads_like_user_code():
    """rfactor is printed as an assignment to the intermediate, which the following
    lines schedule; the calls before it rebuild the loop it preserves."""
    hist = histogram()
    _hist_rfactor(hist)
    assert halo.schedule_source(hist) == (
        'b, ro, ri, u = halo.vars("b ro ri u")\n'
        "hist.vectorize(b, 8)\n"
        "hist.update(0).split(r.x, ro, ri, 7)\n"
        "hist_intm = hist.update(0).rfactor(ro, u)\n"
        "hist_intm.vectorize(b, 8)\n"
        "hist_intm.update(0).parallel(u)\n"
        "hist_intm.compute_root()\n"
        "hist.update(0).reorder(ro, b)\n"
        "hist.update(0).vectorize(b, 8)\n")
