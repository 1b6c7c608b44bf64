"""The demo a newcomer runs first (`make demo`): it says what it is doing while it
compiles, and the loop nest it ends with is readable."""
from __future__ import annotations

from apps import demo


def test_each_app_announces_itself_before_it_compiles(capsys):
    """`make demo` sat 26 s with no output: now a line names each app before it starts
    (flushed), and its row follows as soon as it is done."""
    seen_before_running = []

    def fake_app() -> dict:
        seen_before_running.append(capsys.readouterr().out)
        return {"app": "fake", "size": "3x3", "halo_ms": 1.0, "numpy_ms": 2.0}

    demo.run({"fake": fake_app, "other": fake_app})
    assert "[1/2] fake: compiling" in seen_before_running[0]
    assert "[2/2] other: compiling" in seen_before_running[1]
    assert "fake" in seen_before_running[1] and "2.00x" in seen_before_running[1]


def test_the_loop_nest_it_shows_has_no_wall_of_bounds(capsys):
    """The blur's nest had a 1,081-character line of nested min(max(...)); loop bounds
    longer than the printer's limit print as `...`, as stores do."""
    demo.show_loop_nest()
    lines = capsys.readouterr().out.splitlines()
    assert any(line.strip().startswith("for blur_x.s0.x.x in range(") for line in lines)
    assert max(len(line) for line in lines) <= 160


def test_the_autoschedule_part_at_tiny_sizes(capsys):
    """The demo's second part, as `make demo` runs it but at sizes no tile divides: the
    hand schedule, the autoschedule and NumPy agree (it asserts so), and the table and
    each schedule the autoscheduler wrote are printed."""
    demo.run_autoschedule(demo.auto_cases(blur_shape=(19, 37), matmul_n=23), budget_s=10)
    out = capsys.readouterr().out
    assert out.count("all three agree") == 4  # a progress line and a table row each
    assert demo.AUTO_HEADER in out
    assert "The schedule halo.autoschedule wrote for blur" in out
    assert "blur_y." in out and "C." in out
