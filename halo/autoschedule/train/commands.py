"""The three commands of `python -m halo.autoschedule.train`, printing what they did."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from halo.autoschedule.cost_model import LinearTermsModel, RandomModel, analytical
from halo.autoschedule.measure import DaskExecutor, LocalExecutor, RayExecutor, fingerprint
from halo.autoschedule.train import samples
from halo.autoschedule.train.collect import CollectOptions, CollectSummary, collect
from halo.autoschedule.train.fit import (
    Dataset,
    evaluate,
    featurize,
    fit,
    fit_weights,
    learning_curve,
    records_dataset,
)
from halo.autoschedule.train.metrics import HEADER
from halo.errors import HaloError
from halo.target import Target

# Held-out pipelines a learned model must be scored on before it may become the default:
# on fewer, a win is within the noise of which pipelines were drawn.
MIN_HELD_OUT = 30


def run_collect(args: argparse.Namespace) -> int:
    out = args.out
    if out is None:
        facts = samples.host_facts(args.threads)
        slug = re.sub(r"[^a-z0-9]+", "-", facts["cpu"].lower())
        out = Path("data/autoschedule") / f"{slug}-{args.threads}t.jsonl.gz"
    options = CollectOptions(out, args.seeds, args.threads, args.profile, args.greedy,
                             args.walks, args.repeats, args.rounds, args.chunk, args.workers)
    executor = _executor(args)
    summary = CollectSummary()
    try:
        collect(options, executor, summary)
    except KeyboardInterrupt:
        print("interrupted: the pipelines measured so far are kept; the same command "
              "resumes")
    finally:
        getattr(executor, "close", lambda: None)()
    print(f"{out}: {summary.line()}")
    return 0


def _executor(args: argparse.Namespace):
    if args.executor == "local":
        return LocalExecutor(args.workers)
    if args.executor == "dask":
        return DaskExecutor(args.address)
    return RayExecutor(args.address)


def _datasets(args: argparse.Namespace) -> tuple[Dataset, Dataset]:
    ds = featurize(samples.read(args.samples), args.jobs)
    if ds.stale:
        print(f"{ds.stale} samples skipped as stale: their pipeline no longer draws the "
              "same, or their state no longer makes the schedule measured")
    if args.records:
        machine = fingerprint(Target(threads=args.threads))
        read = records_dataset(args.records, machine)
        print(f"{len(read.dataset.seconds)} measurements of {read.problems} problems from "
              f"tuning records; left out: {read.other_machines} of other machines (not "
              f"{machine['cpu']} with {machine['threads']} threads and halo "
              f"{machine['halo']}), {read.stale} without the current cost terms")
        ds = ds + read.dataset
    train, held_out = ds.split()
    if not len(train.seconds) or not len(held_out.seconds):
        raise HaloError(f"the samples in {', '.join(map(str, args.samples))} give "
                        f"{len(train.seconds)} training and {len(held_out.seconds)} held-out "
                        "samples; collect more pipelines (both sets need some)")
    print(f"{len(train.seconds)} training samples of {len(train.pipelines())} pipelines, "
          f"{len(held_out.seconds)} held-out samples of {len(held_out.pipelines())}")
    return train, held_out


def _curve_table(curve) -> str:
    lines = ["| training pipelines | pairwise accuracy | Spearman rho | median top-1 regret |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {n} | {s.pairwise_accuracy:.3f} | {s.spearman:.3f} | {s.median_regret:.3f} |"
              for n, s in curve]
    return "\n".join(lines)


def run_train(args: argparse.Namespace) -> int:
    train, held_out = _datasets(args)
    weights, fixed_s = fit_weights(train)
    model = LinearTermsModel(weights, "learned")
    learned, baseline = evaluate(model, held_out), evaluate(analytical(), held_out)
    curve = learning_curve(train, held_out)
    print("held-out pipelines:\n" + HEADER)
    print(learned.row("learned") + "\n" + baseline.row("analytical"))
    print("learning curve (held-out scores):\n" + _curve_table(curve))
    print(f"fixed time of a call (fitted, not part of the model): {fixed_s * 1e6:.0f} us")
    wins = learned.pairwise_accuracy > baseline.pairwise_accuracy and \
        learned.median_regret <= baseline.median_regret and \
        learned.geomean_regret <= baseline.geomean_regret and \
        learned.pipelines >= MIN_HELD_OUT
    model.save(args.out, {"default": wins, "samples": len(train.seconds),
                          "pipelines": len(train.pipelines()), "fixed_s": fixed_s,
                          "held_out": {"learned": learned.__dict__,
                                       "analytical": baseline.__dict__}})
    print(f"weights written to {args.out}; " + (
        "they beat the analytical model on the held-out pipelines (pairwise accuracy, "
        "median and geometric-mean top-1 regret): halo.autoschedule's default" if wins else
        f"they don't beat the analytical model on all of pairwise accuracy, median and "
        f"geometric-mean top-1 regret of at least {MIN_HELD_OUT} held-out pipelines: the "
        f"analytical model stays halo.autoschedule's default"))
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    train, held_out = _datasets(args)
    models = [analytical(), RandomModel(0)]
    if args.model.exists():
        models.insert(0, LinearTermsModel.load(args.model))
    models.insert(0, fit(train, "refitted"))
    print("held-out pipelines:\n" + HEADER)
    for m in models:
        print(evaluate(m, held_out).row(m.name))
    # The models no fit saw can be scored on every pipeline: many more than are held out.
    print("all pipelines, by the models fitted on none of them:\n" + HEADER)
    for m in (analytical(), RandomModel(0)):
        print(evaluate(m, train + held_out).row(m.name))
    curve = learning_curve(train, held_out)
    print("learning curve (held-out scores):\n" + _curve_table(curve))
    if not args.plots:
        return 0
    # matplotlib (the `train` extra) is needed by the plots alone.
    from halo.autoschedule.train.plots import draw
    for path in draw(models[:-1], held_out, curve, args.plots):
        print(f"plot: {path}")
    return 0
