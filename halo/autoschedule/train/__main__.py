"""`python -m halo.autoschedule.train collect|train|evaluate`: see docs/autoschedule.md,
"Retraining on your own machine"."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from halo.autoschedule.cost_model import LEARNED_WEIGHTS
from halo.autoschedule.train.commands import run_collect, run_evaluate, run_train
from halo.errors import HaloError
from halo.random_programs.size_profile import PROFILES, REALISTIC

DEFAULT_DATA = Path("data/autoschedule")


def _seeds(text: str) -> tuple[int, ...]:
    lo, _, hi = text.partition(":")
    return tuple(range(int(lo), int(hi))) if hi else (int(lo),)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m halo.autoschedule.train",
                                     description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="measure random pipelines under drawn schedules")
    c.add_argument("--out", type=Path, help="samples file (default: data/autoschedule/"
                   "<cpu>-<threads>t.jsonl.gz)")
    c.add_argument("--seeds", type=_seeds, default=_seeds("0:200"), help="lo:hi")
    c.add_argument("--profile", choices=sorted(PROFILES), default=REALISTIC.name)
    c.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="threads the schedules run on (default: all cores)")
    c.add_argument("--workers", type=int, default=2, help="compile workers")
    c.add_argument("--executor", choices=("local", "dask", "ray"), default="local")
    c.add_argument("--address", help="the Dask scheduler's or Ray cluster's address")
    c.add_argument("--greedy", type=int, default=4)
    c.add_argument("--walks", type=int, default=8)
    c.add_argument("--repeats", type=int, default=3, help="timed calls a round")
    c.add_argument("--rounds", type=int, default=3,
                   help="rounds a pipeline's schedules are timed in, side by side")
    c.add_argument("--chunk", type=int, default=16)
    for name, p in (("train", "fit the model's weights"),
                    ("evaluate", "score models on held-out pipelines, draw plots")):
        s = sub.add_parser(name, help=p)
        s.add_argument("samples", nargs="*", type=Path, default=[DEFAULT_DATA],
                       help="samples files or folders (default: data/autoschedule)")
        s.add_argument("--jobs", type=int, default=2, help="processes computing features")
        s.add_argument("--records", type=Path, action="append", default=[],
                       help="a tuning records file (halo.autoschedule(..., records=...)) "
                            "whose measurements on this machine join the samples; repeat "
                            "for more")
        s.add_argument("--threads", type=int, default=None,
                       help="the thread count the records were measured with (default: "
                            "halo's default for this host)")
        if name == "train":
            s.add_argument("--out", type=Path, default=LEARNED_WEIGHTS,
                           help="where the weights go (default: the package's; they are "
                                "the default model only if they beat the analytical one "
                                "on the held-out pipelines)")
        else:
            s.add_argument("--model", type=Path, default=LEARNED_WEIGHTS,
                           help="the learned weights (default: the package's)")
            s.add_argument("--plots", type=Path, default=Path("build/train"),
                           help="folder for the plots (needs matplotlib: the train extra)")
            s.add_argument("--no-plots", dest="plots", action="store_const", const=None,
                           help="print the scores only")
    args = parser.parse_args(argv)
    run = {"collect": run_collect, "train": run_train, "evaluate": run_evaluate}
    try:
        return run[args.command](args)
    except HaloError as e:
        print(f"{parser.prog} {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
