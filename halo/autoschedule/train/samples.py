"""The raw training samples: one JSON record per measured schedule, appended to a
gzip-compressed JSON-lines file (each append a gzip member; readers see one stream).

A record holds what is needed to recompute its features later without measuring again:
the pipeline (`seed`, `profile`, `generator` = `GENERATOR_VERSION`, and `pipeline`, a
hash of what that drew, to notice a generator that changed without its version), the
search state (`pipelines.state_json`), how it was drawn (`how`), the schedule as halo's
JSON records (`schedule`, to measure it again), the measured `times_s` (or `error`;
`rounds` rounds of `repeats` calls, the pipeline's schedules timed in turns; records
without `rounds` were timed one schedule at a time), `compile_s`, and `machine`: the
measuring host's fingerprint (`halo.autoschedule.measure.fingerprint`) with the facts
the features depend on (`vector_bytes`, `cache_bytes`).
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from halo.autoschedule.measure import fingerprint
from halo.target import Target, host_cache_bytes, host_cpu


def host_facts(threads: int) -> dict:
    """This host's fingerprint for `threads` threads, with its vector width and cache
    sizes (`halo.target.host_cache_bytes`)."""
    return {**fingerprint(Target(threads=threads)), "vector_bytes": host_cpu().vector_bytes,
            "cache_bytes": list(host_cache_bytes())}


def append(path: str | Path, records: Iterable[dict]) -> None:
    """Append `records` to the file at `path` (made, with its folder, if missing)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    if lines:
        with gzip.open(path, "at", encoding="utf-8") as f:
            f.write(lines)


def read(paths: Iterable[str | Path]) -> Iterator[dict]:
    """Every record of the files at `paths` (a folder: its `*.jsonl.gz` files), up to
    a truncated end."""
    for p in paths:
        p = Path(p)
        files = sorted(p.glob("*.jsonl.gz")) if p.is_dir() else [p]
        for f in files:
            if not f.exists():
                continue
            with gzip.open(f, "rt", encoding="utf-8") as lines:
                try:
                    for line in lines:
                        if line.strip():
                            yield json.loads(line)
                except (EOFError, gzip.BadGzipFile, json.JSONDecodeError):
                    # An append cut short (the collector was killed): what came before it
                    # stands; `collect` measures that chunk's pipelines again.
                    continue
