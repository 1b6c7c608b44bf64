"""The tuning curve of one app: `python -m benchmarks.tuning_curve --app blur --budget 600`.

Tunes the app at its benchmark size (`benchmarks/cases.py`) with
`halo.autoschedule(..., measure=True, budget_s=...)` and reports the best measured time
against the seconds spent, beside the model's choice (no measuring) and the app's hand
schedule. At the end the finalists (hand, model, tuned and Adams2019's best) are timed
side by side, a call of each per round (`halo.timing.side_by_side`): those medians are
the reported times and ratios. Writes the curve
as JSON and, with matplotlib, a plot (best time vs seconds, the hand schedule as a line).
`--records` keeps the measurements (a second run resumes from them).

Where the `halide` package imports, Halide's Adams2019 then gets the same wall-clock
budget (the seconds halo's tuning took): its default beam search first, then samples with
a beam of one and random dropout (`random_dropout` 1: each decision may drop a candidate,
`random_dropout_seed` 1, 2, ...), each compiled, checked against halo's hand schedule and
timed the same way; its curve is the best so far against the seconds spent
(`--no-halide` skips it).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import halo
from benchmarks.cases import CASES
from halo.autoschedule.measure import LocalExecutor
from halo.lang.environment import Environment
from halo.target import default_num_threads
from halo.timing import median_time, side_by_side

RESULTS = Path(__file__).resolve().parent / "results"


def _fresh(case):
    """The app's algorithm: (output Func, {input name: ImageParam}, funcs)."""
    *_, out, funcs = case.module.algorithm()
    return out, Environment.of([out]).inputs, funcs


def _runner(out, arrays: dict, shape: tuple[int, ...]):
    """A call of `out`, compiled as scheduled now, on `arrays`, into an output of its own
    made once (as Adams2019's calls write into one array: a new output each call would
    time its page faults too)."""
    kernel = out.compile()
    result = np.empty(shape, out.type.numpy)
    return lambda: kernel.run(None, result, None, None, arrays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--app", default="blur", help="an app of benchmarks/cases.py")
    parser.add_argument("--budget", type=float, default=600.0, help="tuning seconds")
    parser.add_argument("--workers", type=int, default=2, help="compiling processes")
    parser.add_argument("--records", default=None, help="a records file to keep")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--final-rounds", type=int, default=31,
                        help="rounds of the finalists timed side by side")
    parser.add_argument("--threads", type=int, default=default_num_threads(),
                        help="Adams2019's parallelism (default: halo's thread count)")
    parser.add_argument("--no-halide", action="store_true",
                        help="skip Adams2019 given the same budget")
    parser.add_argument("--out", default=str(RESULTS / "tuning_curve"),
                        help="path prefix of the .json and .png written")
    args = parser.parse_args()
    case = next(c for c in CASES if c.app == args.app)
    arrays = case.make_inputs()
    shape = np.shape(case.numpy(**arrays))

    out, inputs, funcs = _fresh(case)
    case.module.schedule(funcs)
    runs = {"hand": _runner(out, arrays, shape)}
    hand_result = out.realize(shape, inputs={inputs[k]: v for k, v in arrays.items()})

    out, inputs, _ = _fresh(case)
    estimates = {out: shape, **{p: arrays[name].shape for name, p in inputs.items()}}
    halo.autoschedule(out, estimates=estimates)  # the model's choice, applied
    runs["model"] = _runner(out, arrays, shape)

    out, inputs, _ = _fresh(case)
    estimates = {out: shape, **{p: arrays[name].shape for name, p in inputs.items()}}
    start = time.monotonic()
    with LocalExecutor(workers=args.workers) as executor:
        tuned = halo.autoschedule(out, estimates=estimates, measure=True,
                                  budget_s=args.budget, records=args.records,
                                  executor=executor, progress=True)
    wall_s = time.monotonic() - start
    runs["tuned"] = _runner(out, arrays, shape)

    report = {"app": case.label, "budget_s": args.budget, "wall_s": wall_s,
              "tuned_measured_s": tuned.measured_s, "measurements": tuned.measurements,
              "curve": tuned.curve, "source": tuned.source}
    if not args.no_halide:
        adams = report["adams2019"] = _adams2019(case, arrays, hand_result, args.threads,
                                                 wall_s, args.repeats)
        if adams.get("best_s") is not None:
            runs["adams2019"] = adams.pop("best_run")
    # The finalists side by side, as benchmarks/measure.py times its variants: timed one
    # after another minutes apart, a noisy machine's drift decided the ratios. And with
    # too few rounds, its noise did: conv_relu's tuned and hand schedules, 1.38x apart
    # in medians of 9 rounds, were within 3% of each other in three runs of 31.
    final = side_by_side(runs, args.final_rounds)
    report.update({f"{name}_s": seconds for name, seconds in final.items()
                   if name != "adams2019"})
    hand_s, model_s, tuned_s = final["hand"], final["model"], final["tuned"]
    prefix = Path(args.out)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps(report, indent=1))
    print(f"{case.label}, side by side (median of {args.final_rounds} rounds): hand "
          f"{hand_s * 1e3:.3f} ms, model {model_s * 1e3:.3f} ms, tuned {tuned_s * 1e3:.3f} "
          f"ms after {tuned.measurements} measurements in {wall_s:.0f} s")
    print(f"{'seconds':>8}  best (ms)")
    for seconds, best in tuned.curve:
        print(f"{seconds:8.1f}  {best * 1e3:.3f}")
    adams = report.get("adams2019")
    if "adams2019" in final:
        adams["best_side_by_side_s"] = final["adams2019"]
        default = ("wrong" if adams["default_s"] is None
                   else f"{adams['default_s'] * 1e3:.3f} ms")
        print(f"Halide Adams2019, the same {wall_s:.0f} s: best {adams['best_s'] * 1e3:.3f} "
              f"ms when sampled, {final['adams2019'] * 1e3:.3f} ms side by side with "
              f"halo's, of {adams['samples']} schedules ({adams['wrong']} wrong, "
              f"{adams['failed']} Halide couldn't compile; its "
              f"default beam: {default}); halo tuned / Adams2019 "
              f"{tuned_s / final['adams2019']:.2f}x")
    elif adams:
        print(f"Halide Adams2019: {adams.get('skipped', 'no schedule it wrote was right')}")
    _plot(report, prefix.with_suffix(".png"))


def _adams2019(case, arrays: dict, expected: np.ndarray, threads: int, budget_s: float,
               repeats: int) -> dict:
    """Halide's Adams2019 for `budget_s` seconds of wall clock: its default search, then
    randomized samples (a beam of one, random dropout), the best time so far as a curve."""
    try:
        from benchmarks import halide_twins as twins
    except ImportError as e:
        return {"skipped": f"halide does not import ({e})"}
    if case.app not in twins.TWINS:
        return {"skipped": f"no Halide twin of {case.app}"}
    start = time.monotonic()
    curve, best, best_source, default_s, seed, wrong = [], None, None, None, 0, 0
    best_run, failed = None, 0
    while seed == 0 or time.monotonic() - start < budget_s:
        options = {} if seed == 0 else {"beam_size": "1", "random_dropout": "1",
                                        "random_dropout_seed": str(seed)}
        try:
            done = twins.compile_autoscheduled(case.app, arrays, expected.shape, threads,
                                               "Adams2019", options)
        except twins.hl.HalideError:  # a sample Halide can't compile: the next one
            failed += 1
            seed += 1
            continue
        out = np.empty_like(expected)
        done.run(out)
        if not np.allclose(out, expected, rtol=1e-4, atol=1e-4):
            wrong += 1  # (Adams2019 has read out of bounds on harris: not counted)
        else:
            t = median_time(lambda out=out, done=done: done.run(out), repeats)
            default_s = t if seed == 0 else default_s
            if best is None or t < best:
                best, best_source = t, done.source
                best_run = lambda out=out, done=done: done.run(out)  # noqa: E731
            curve.append((time.monotonic() - start, best))
        seed += 1
    return {"best_s": best, "default_s": default_s, "samples": seed, "wrong": wrong,
            "failed": failed, "curve": curve, "best_source": best_source,
            "best_run": best_run}


def _plot(report: dict, path: Path) -> None:
    try:
        # matplotlib comes with the bench extra; without it the JSON is the result.
        import matplotlib
    except ImportError:
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    seconds = [s for s, _ in report["curve"]]
    best = [b * 1e3 for _, b in report["curve"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step(seconds, best, where="post", label="halo auto+tune (best measured)")
    ax.axhline(report["hand_s"] * 1e3, color="gray", linestyle="--", label="halo hand")
    ax.axhline(report["model_s"] * 1e3, color="orange", linestyle=":", label="halo auto")
    adams = report.get("adams2019") or {}
    if adams.get("curve"):
        ax.step([s for s, _ in adams["curve"]], [b * 1e3 for _, b in adams["curve"]],
                where="post", color="green", label="Halide Adams2019 (best sampled)")
    ax.set_xlabel("tuning seconds")
    ax.set_ylabel("run time (ms)")
    ax.set_title(f"{report['app']}: tuning curve")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
