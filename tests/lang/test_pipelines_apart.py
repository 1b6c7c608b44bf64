"""Two pipelines built in one process never see each other: `cache_read` without
readers redirects only Funcs that read that very source, and a saved schedule finds
its Intrinsics among those its caller passes, not among every Intrinsic declared."""
from __future__ import annotations

import halo
from halo.lang.schedule_files import apply_json, schedule_to_json

x, xo, xi = halo.vars("x xo xi")


def _pipeline() -> tuple[halo.ImageParam, halo.Func, halo.Func]:
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x] + 1.0
    out = halo.Func("out")
    out[x] = f[x] * 2.0
    return inp, f, out


def test_cache_read_of_one_pipeline_leaves_the_other_alone():
    """`inp.cache_read` with readers=None takes the readers of this `inp` only, though
    the other pipeline's Funcs have the same names."""
    inp_a, f_a, _ = _pipeline()
    inp_b, f_b, out_b = _pipeline()
    before = f_a.definitions
    copy = inp_b.cache_read("global")
    assert f_a.definitions == before
    assert copy in f_b.definitions[0].deps
    assert "inp_global" in halo.schedule_source(out_b)


def _intrinsic(reduces: bool) -> halo.Intrinsic:
    """An intrinsic named "dot": a 2-deep nest that sums 4 values per point, or a 1-deep
    copy; each call a new declaration."""
    a = halo.ImageParam(halo.float32, 1, "a")
    spec = halo.Func("dot_spec")
    if reduces:
        r = halo.RDom((0, 4), name="r")
        spec[x] = 0.0
        spec[x] += a[x + r]
    else:
        spec[x] = a[x]
    spec.bound(x, 0, 4)
    return halo.Intrinsic("dot", spec, emit=lambda *args: None)


def _tensorized(intrinsic: halo.Intrinsic | None) -> halo.Func:
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 4), name="r_in")
    s = halo.Func("s")
    s[x] = 0.0
    s[x] += inp[x + r]
    if intrinsic is not None:
        s.update(0).split(x, xo, xi, 4, tail="guard").tensorize(xi, intrinsic)
    return s


def test_a_saved_schedule_takes_the_intrinsic_it_is_given():
    """Another pipeline declaring an Intrinsic of the same name after this one's does
    not change which one this pipeline's saved schedule loads."""
    mine = _intrinsic(reduces=True)
    text = schedule_to_json(_tensorized(mine))
    assert _intrinsic(reduces=False).loop_count != mine.loop_count
    fresh = _tensorized(None)
    apply_json(fresh, text, intrinsics=[mine])
    assert fresh.update(0)._stage().tensorize.intrinsic == "dot"
    assert schedule_to_json(fresh) == text
