"""Addresses in inner loops: int32 indices are computed in 64 bits (codegen's
_wide_index), so a loop keeps one 64-bit offset and a stencil's taps are constant
displacements of one base, as in Halide's code."""
from __future__ import annotations

import re

import numpy as np
import pytest

import halo

y, x, yo, yi = halo.vars("y x yo yi")


def sliding_stencil(lanes: int):
    """out reads 3 taps of g over two rows; g slides down strips of 8 rows, its storage
    folded to 2 rows: the rows' offsets are `y % 2 * width`, invariant in the x loop."""
    image = halo.ImageParam(halo.float32, 2, "image")
    g, out = halo.Func("g"), halo.Func("out")
    g[y, x] = image[y, x] * 3.0
    out[y, x] = g[y, x] + g[y, x + 1] + g[y + 1, x + 2]
    out.split(y, yo, yi, 8).parallel(yo).vectorize(x, lanes)
    g.store_at(out, yo).compute_at(out, yi).vectorize(x, lanes)
    return image, out


def loops(assembly: str) -> list[list[str]]:
    """The instructions of each loop of `assembly` (AT&T): from a label to the last jump
    back to it."""
    lines = assembly.splitlines()
    found = []
    for start, line in enumerate(lines):
        label = re.match(r"(\.LBB\w+):", line)
        if not label:
            continue
        jumps = [k for k in range(start + 1, len(lines))
                 if re.match(rf"\s+j\w+\s+{re.escape(label.group(1))}$", lines[k])]
        if jumps:
            found.append(lines[start + 1:jumps[-1] + 1])
    return found


@pytest.mark.parametrize("lanes", [8, 16])
def test_stencil_taps_are_displacements_of_one_base(lanes):
    image, out = sliding_stencil(lanes)
    kernel = out.compile()
    a = np.random.default_rng(0).random((21, 45), dtype=np.float32)
    result = kernel((20, 43), image=a)
    g = a * np.float32(3)
    np.testing.assert_allclose(result, g[:-1, :-2] + g[:-1, 1:-1] + g[1:, 2:], rtol=1e-6)
    inner = [body for body in loops(kernel.function.assembly())
             if any("vaddps" in line for line in body) and not any(
                 re.search(r"\.LBB", line) and ":" in line for line in body)]
    assert inner, "no vector loop of out found"
    for body in inner:
        text = "\n".join(body)
        assert "movslq" not in text and "movsxd" not in text, text
        # the taps x and x + 1 of a row: one register, displacements 4 bytes apart
        displacements = {int(d or 0) for d in re.findall(r"\s(-?\d*)\(%\w+,%\w+", text)}
        assert any(d + 4 in displacements for d in displacements), text
