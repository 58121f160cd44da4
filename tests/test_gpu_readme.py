"""The README's Python examples run as written on a GPU, and compute what they say (against float64 of the same
quantised inputs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parent.parent / "README.md"


def _examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_three_examples() -> None:
    assert len(_examples()) == 3


@pytest.mark.gpu
@pytest.mark.parametrize("index", range(3), ids=["dense", "grouped", "wgrad"])
def test_readme_example_runs_as_written(index: int, capsys) -> None:
    import gemmgen
    from gemmgen.quant import dequantize_a, dequantize_b

    scope: dict = {}
    exec(compile(_examples()[index], f"README example {index + 1}", "exec"), scope)
    torch.cuda.synchronize()
    if index == 0:
        ref = dequantize_a(scope["a"], scope["sa"]) @ dequantize_b(scope["b"], scope["sb"]).t()
        assert gemmgen.calc_diff(scope["out"], ref) < 1e-3
        assert float(capsys.readouterr().out) < 2e-3  # what it prints: against the unquantised product
    elif index == 1:
        y, x, counts = scope["y"], scope["x"], scope["counts"]
        assert y.shape == (sum(counts), scope["N"]) and not y.isnan().any()
        b, sb = scope["b"], scope["sb"]
        rows = 0
        for g, c in enumerate(counts):
            if c:
                a, sa = gemmgen.per_token_cast_to_fp8(x[rows:rows + c])
                ref = dequantize_a(a, sa) @ dequantize_b(b[g], sb[g]).t()
                assert gemmgen.calc_diff(y[rows:rows + c], ref) < 1e-3, g
            rows += c
    else:
        ref = dequantize_a(scope["a"], scope["sa"]) @ dequantize_a(scope["b"], scope["sb"]).t()
        assert gemmgen.calc_diff(scope["dw"], ref) < 1e-6
