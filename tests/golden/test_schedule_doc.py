"""docs/schedule.md is produced by code: every ```python example block in it is run, and
the ```text block right after it must be the loop nest the example prints, before and
after its schedule. `pytest tests/golden --update-golden` rewrites those text blocks."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "schedule.md"
# A ```python block, the ```text block after it, and what stands between them.
EXAMPLE = re.compile(r"```python\n(?P<code>.*?)```(?P<gap>\n+)```text\n(?P<out>.*?)```",
                     re.S)
SETUP = re.compile(r"```python setup\n(?P<code>.*?)```", re.S)
# Schedules recorded and checked now but not lowered for the host (GPU bindings).
RECORD = re.compile(r"```python record\n(?P<code>.*?)```", re.S)
SCHEDULE_MARK = "# schedule:"


def run_example(setup: str, code: str) -> str:
    """Run the algorithm part of `code`, print `out`'s loop nest, run the schedule part
    (after the `# schedule:` line), print it again."""
    algorithm, mark, schedule = code.partition(SCHEDULE_MARK)
    assert mark, f"an example needs a '{SCHEDULE_MARK}' line:\n{code}"
    names: dict = {}
    exec(setup, names)  # noqa: S102 - the documentation's own code
    exec(algorithm, names)  # noqa: S102
    before = _loop_nest(names)
    exec(schedule, names)  # noqa: S102
    return f"# before\n{before}# after\n{_loop_nest(names)}"


def _loop_nest(names: dict) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        names["out"].print_loop_nest()
    return buffer.getvalue()


def _examples(text: str) -> list[re.Match]:
    return list(EXAMPLE.finditer(text))


def test_every_example_prints_its_loop_nests(request):
    """Each example's text block is exactly what its code prints."""
    text = DOC.read_text()
    setup = SETUP.search(text).group("code")
    examples = _examples(text)
    assert examples and len(examples) == text.count("```python\n"), \
        "every ```python example needs a ```text block right after it"
    rebuilt, last, wrong = [], 0, []
    for m in examples:
        out = run_example(setup, m.group("code"))
        if out != m.group("out"):
            wrong.append(m.group("code").strip().splitlines()[-1])
        rebuilt += [text[last:m.start("out")], out]
        last = m.end("out")
    rebuilt.append(text[last:])
    if request.config.getoption("--update-golden"):
        DOC.write_text("".join(rebuilt))
        return
    assert not wrong, f"docs/schedule.md is stale for: {wrong}; run pytest tests/golden " \
                      "--update-golden and review the diff"


def test_every_schedule_method_is_documented():
    """Each public schedule method of Func and of an update Stage has a section."""
    import halo
    from halo.lang.func import Stage
    text = DOC.read_text()
    classes = [c for c in (*halo.Func.__mro__, *Stage.__mro__)
               if c.__module__.startswith("halo.schedule")]
    methods = {m for c in classes for m, v in vars(c).items()
               if not m.startswith("_") and callable(v)}
    missing = sorted(m for m in methods if f"### `{m}(" not in text)
    assert not missing, f"docs/schedule.md has no section for {missing}"


def test_recorded_examples_are_accepted_and_refused_for_the_host():
    """Each example of a record-only schedule runs, and lowering it for the host says
    which target it needs instead of producing wrong loops."""
    import halo
    text = DOC.read_text()
    setup = SETUP.search(text).group("code")
    examples = list(RECORD.finditer(text))
    assert len(examples) == 5
    for m in examples:
        names: dict = {}
        exec(setup, names)  # noqa: S102 - the documentation's own code
        exec(m.group("code"), names)  # noqa: S102
        with pytest.raises(halo.ScheduleError, match="cuda"):
            names["out"].lower()


@pytest.mark.parametrize("bad", ["out.split(x, xo, xi, 4)\n", "# schedule:\n"])
def test_an_example_without_output_or_mark_is_rejected(bad):
    """The harness itself fails on a malformed example rather than passing vacuously."""
    setup = SETUP.search(DOC.read_text()).group("code")
    with pytest.raises((AssertionError, KeyError)):
        run_example(setup, bad)
