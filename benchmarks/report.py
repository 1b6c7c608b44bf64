"""Writing the results: `results.json` (everything), `results.md` (the tables),
`speedup.png` (speedup over NumPy per app and variant), and per case the loop nests and
the autoscheduler's schedule, to read the numbers against.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path

from benchmarks.compile_time import markdown as compile_markdown
from benchmarks.measure import (
    AUTOSCHEDULED,
    HALIDE,
    HALIDE_AUTO,
    HALO,
    HALO_AUTO,
    HALO_TUNE,
    LABELS,
    NUMPY,
    VARIANTS,
    CaseResult,
)


def write_all(results: list[CaseResult], meta: dict, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_json(results, meta, directory / "results.json")
    (directory / "results.md").write_text(markdown(results, meta))
    write_chart(results, meta, directory / "speedup.png")
    for r in results:
        for name, text in r.artifacts.items():
            path = directory / "details" / _slug(f"{r.app} {r.size}") / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def write_json(results: list[CaseResult], meta: dict, path: Path) -> None:
    cases = []
    for r in results:
        case = asdict(r)
        del case["artifacts"]
        for name, variant in case["variants"].items():
            variant["median_ms"] = r.median_ms(name)
            variant["agrees"] = r.agrees(name)
            if r.flops and variant["median_ms"]:
                variant["gflops"] = r.flops / variant["median_ms"] / 1e6
        cases.append(case)
    path.write_text(json.dumps({"meta": meta, "cases": cases}, indent=2) + "\n")


def markdown(results: list[CaseResult], meta: dict) -> str:
    columns = [v for v in VARIANTS if any(v in r.variants and not r.variants[v].skipped
                                           for r in results)]
    lines = [
        "# halo benchmarks",
        "",
        f"{meta['cpu']}, {meta['threads']} thread(s) for every variant, median of "
        f"{meta['repeats']} interleaved runs after a checked warm-up run. "
        f"{meta['date']}, halo at {meta.get('revision') or 'an unknown revision'}"
        + (f", Halide target {meta['halide_target']}" if "halide_target" in meta else "")
        + ".",
        "",
        "Milliseconds per run (lower is better). `halo / Halide` > 1 means halo is slower "
        "than Halide running the same schedule; `auto / hand` > 1 means halo's "
        "autoschedule is slower than its hand schedule; `auto / Halide auto` compares it "
        "with the fastest of Halide's autoschedulers; `x NumPy` is the speedup over NumPy "
        "(higher is better). ✗ marks a variant whose output disagreed with NumPy's.",
        "",
    ]
    halide_autos = [v for v in HALIDE_AUTO.values() if v in columns]
    header = ["app", "size", *(f"{LABELS[v]} ms" for v in columns)]
    if HALIDE in columns:
        header.append("halo / Halide")
    if HALO_AUTO in columns:
        header.append("auto / hand")
    if HALO_AUTO in columns and halide_autos:
        header.append("auto / Halide auto")
    if HALO_TUNE in columns:
        header.append("auto+tune / hand")
    header += [f"{LABELS[v]} x NumPy" for v in columns if v != NUMPY]
    lines += [_row(header), _row(["---"] * 2 + ["---:"] * (len(header) - 2))]
    for r in results:
        cells = [r.app, r.size, *(_ms(r, v) for v in columns)]
        if HALIDE in columns:
            cells.append(_ratio(r, HALO, HALIDE))
        if HALO_AUTO in columns:
            cells.append(_ratio(r, HALO_AUTO, HALO))
        if HALO_AUTO in columns and halide_autos:
            cells.append(_ratio(r, HALO_AUTO, _fastest(r, halide_autos)))
        if HALO_TUNE in columns:
            cells.append(_ratio(r, HALO_TUNE, HALO))
        cells += [_ratio(r, NUMPY, v) for v in columns if v != NUMPY]
        lines.append(_row(cells))
    autos = [v for v in AUTOSCHEDULED if v in columns]
    if autos:
        lines += ["", "Autoscheduling, seconds to choose the schedule + seconds to compile it "
                  "(halo's first figure is its whole `autoschedule` call, which also compiles "
                  "and runs its best candidates to check them):", "",
                  _row(["app", "size", *(LABELS[v] for v in autos)]),
                  _row(["---"] * 2 + ["---:"] * len(autos))]
        for r in results:
            lines.append(_row([r.app, r.size, *(_search(r, v) for v in autos)]))
    with_flops = [r for r in results if r.flops]
    if with_flops:
        lines += ["", "GFLOP/s (higher is better):", "",
                  _row(["app", "size", *(LABELS[v] for v in columns)]),
                  _row(["---"] * 2 + ["---:"] * len(columns))]
        for r in with_flops:
            lines.append(_row([r.app, r.size, *(_gflops(r, v) for v in columns)]))
    errors = [f"- {r.app} {r.size}, {LABELS[name]} failed: {v.error}"
              for r in results for name, v in r.variants.items() if v.error]
    errors += [f"- {r.app} {r.size}: outputs differ, {m}" for r in results
               for m in r.mismatches]
    if errors:
        lines += ["", "## Problems", "", *errors]
    skipped = {(name, v.skipped) for r in results for name, v in r.variants.items()
               if v.skipped}
    if skipped:
        lines += ["", *(f"{LABELS[name]} skipped: {reason}." for name, reason in
                        sorted(skipped))]
    if "compile_time" in meta:
        lines += ["", "Compile time in ms, fresh processes (`python -m benchmarks.compile_time`"
                  "): lowering, then everything else `compile` does (LLVM code generation, "
                  "optimization and JIT, or loading from the on-disk cache):", "",
                  compile_markdown(meta["compile_time"])]
    lines += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
              ""]
    return "\n".join(lines)


def write_chart(results: list[CaseResult], meta: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = [v for v in VARIANTS if v != NUMPY and any(
        r.median_ms(v) is not None for r in results)]
    width = 0.8 / max(len(variants), 1)
    fig, ax = plt.subplots(figsize=(1.6 * len(results) + 3, 4.8))
    for k, variant in enumerate(variants):
        speedups = [_speedup(r, variant) for r in results]
        positions = [i + (k - (len(variants) - 1) / 2) * width for i in range(len(results))]
        bars = ax.bar(positions, [s or 0 for s in speedups], width, label=LABELS[variant])
        for bar, s in zip(bars, speedups, strict=True):
            if s:
                ax.annotate(f"{s:.2g}", (bar.get_x() + bar.get_width() / 2, s),
                            ha="center", va="bottom", fontsize=7)
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("speedup over NumPy (log scale)")
    ax.set_xticks(range(len(results)))
    ax.set_xticklabels([f"{r.app}\n{r.size}" for r in results], fontsize=8)
    ax.set_title(f"Speedup over NumPy, {meta['threads']} thread(s), median of "
                 f"{meta['repeats']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _speedup(r: CaseResult, variant: str) -> float | None:
    base, t = r.median_ms(NUMPY), r.median_ms(variant)
    return base / t if base and t and r.agrees(variant) else None


def _ms(r: CaseResult, variant: str) -> str:
    v = r.variants.get(variant)
    if v is None or v.skipped:
        return "—"
    if v.error:
        return "error"
    mark = "" if r.agrees(variant) else " ✗"
    return f"{r.median_ms(variant):.2f}{mark}"


def _search(r: CaseResult, variant: str) -> str:
    v = r.variants.get(variant)
    if v is None or v.search_s is None or v.compile_s is None:
        return "—"
    return f"{v.search_s:.1f} + {v.compile_s:.1f}"


def _fastest(r: CaseResult, variants: list[str]) -> str:
    """The variant of `variants` with the lowest median that agrees with NumPy (the first
    if none does)."""
    timed = [v for v in variants if r.agrees(v)]
    return min(timed, key=r.median_ms) if timed else variants[0]


def _gflops(r: CaseResult, variant: str) -> str:
    ms = r.median_ms(variant)
    return f"{r.flops / ms / 1e6:.1f}" if ms else "—"


def _ratio(r: CaseResult, numerator: str, denominator: str) -> str:
    """ms of `numerator` / ms of `denominator`, if both ran and agree with NumPy."""
    if not (r.agrees(numerator) and r.agrees(denominator)):
        return "—"
    return f"{r.median_ms(numerator) / r.median_ms(denominator):.2f}x"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
