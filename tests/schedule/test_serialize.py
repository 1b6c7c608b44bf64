"""Schedules round-trip through halo source code and JSON: re-applied to a freshly
defined algorithm, they lower to exactly the same IR."""
from __future__ import annotations

import pytest

import apps.blur
import apps.matmul
import halo
from halo.lang.environment import Environment
from halo.lang.schedule_files import apply_json, schedule_to_json

y, x, yo, xo, yi, xi, t = halo.vars("y x yo xo yi xi t")
i, j, io, jo, ii, ji, ko, ki = halo.vars("i j io jo ii ji ko ki")


def blur():
    _, out, funcs = apps.blur.algorithm()
    return out, funcs


def matmul():
    _, _, C, funcs = apps.matmul.algorithm()
    return C, funcs


def _blur_tiles(out, f):
    apps.blur.schedule(f)


def _blur_store_at(out, f):
    out.split(y, yo, yi, 8, tail="guard").reorder(x, yi).unroll(x, 2)
    f["blur_x"].store_at(out, yo).compute_at(out, yi).store_in("global")


def _blur_fuse_after_reorder(out, f):
    out.reorder(x, y).fuse(x, y, t).parallel(t, 16)
    f["blur_x"].compute_root().bound(y, -1, 40).set_estimates([(0, 40), (0, 64)])


def _matmul_update(out, f):
    k = f["k"]
    out.update(0).tile(i, j, io, jo, ii, ji, 4, 8).reorder(io, jo, ii, k.x, ji) \
        .split(k.x, ko, ki, 4).unroll(ki).vectorize(ji)
    out.vectorize(j, 8)


def _blur_reused_names(out, f):
    """Names a split or fuse consumed, reused as Halide's schedules do (issue 12)."""
    out.tile(y, x, yo, xo, y, x, 8, 16).fuse(yo, xo, t).split(t, t, xo, 2) \
        .fuse(t, xo, yo).parallel(yo)
    f["blur_x"].compute_at(out, yo)


def _blur_fuse_into_a_consumed_name(out, f):
    out.tile(y, x, yo, xo, yi, xi, 8, 16).fuse(yo, xo, y).parallel(y)
    f["blur_x"].compute_at(out, y)


CASES = [(blur, _blur_tiles), (blur, _blur_store_at), (blur, _blur_fuse_after_reorder),
         (matmul, _matmul_update), (blur, _blur_reused_names),
         (blur, _blur_fuse_into_a_consumed_name)]


def _namespace(out) -> dict:
    """What a user's script would have in scope: halo, and Funcs and RDoms by name."""
    env = Environment.of([out])
    ns = {"halo": halo, **env.funcs}
    for f in env.funcs.values():
        ns.update({d.rdom.name: d.rdom for d in f.definitions if d.rdom is not None})
    return ns


def _rename_auto(text: str, a, b) -> str:
    """Auto-named Funcs (boundary conditions) differ between two definitions of one
    algorithm; map b's names onto a's."""
    for fa, fb in zip(Environment.of([a]).funcs, Environment.of([b]).funcs, strict=True):
        text = text.replace(fb, fa)
    return text


@pytest.mark.parametrize("make,sched", CASES, ids=lambda c: c.__name__.strip("_"))
def test_schedule_source_round_trip(make, sched):
    """schedule_source, executed against a fresh algorithm, reproduces the lowered IR."""
    out, funcs = make()
    sched(out, funcs)
    source = halo.schedule_source(out)
    fresh, _ = make()
    ns = _namespace(fresh)
    ns.update(dict(zip(Environment.of([out]).funcs, Environment.of([fresh]).funcs.values(),
                       strict=True)))
    exec(source, ns)
    assert _rename_auto(str(fresh.lower()), out, fresh) == str(out.lower())


@pytest.mark.parametrize("make,sched", CASES, ids=lambda c: c.__name__.strip("_"))
def test_schedule_json_round_trip(make, sched):
    """schedule_to_json then apply_json on a fresh algorithm reproduces the lowered IR."""
    out, funcs = make()
    sched(out, funcs)
    text = schedule_to_json(out)
    fresh, _ = make()
    text = _rename_auto(text, fresh, out)
    apply_json(fresh, text)
    assert _rename_auto(str(fresh.lower()), out, fresh) == str(out.lower())


def test_schedule_source_reads_like_user_code():
    """The printed schedule declares its Vars and writes one call per line, each as the
    user wrote it (a tile, not two splits and a reorder; vectorize(x, 8), not a split)."""
    out, funcs = blur()
    apps.blur.schedule(funcs)
    source = halo.schedule_source(out)
    assert source == (
        'x, xo, y, yo, yi, xi = halo.vars("x xo y yo yi xi")\n'
        "blur_x.vectorize(x, 8)\n"
        "blur_x.compute_at(blur_y, xo)\n"
        "blur_y.tile(y, x, yo, xo, yi, xi, 32, 256)\n"
        "blur_y.parallel(yo)\n"
        "blur_y.vectorize(xi, 8)\n")


def test_apply_json_names_unknown_funcs():
    """A saved schedule for Funcs that aren't in the pipeline is refused by name."""
    out, _ = blur()
    with pytest.raises(halo.ScheduleError, match="names Func.s. nowhere"):
        apply_json(out, '{"nowhere": {}}')
