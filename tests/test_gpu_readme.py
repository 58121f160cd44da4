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
@pytest.mark.parametrize("index", range(3), ids=["dense", "moe_layer", "wgrad"])
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
    elif index == 1:  # the MoE layer: against float64 of the same FP8 weights, and what it prints
        import torch.nn.functional as F

        out, e, i = scope["out"], scope["E"], scope["I"]
        assert out.shape == (scope["T"], scope["H"]) and not out.isnan().any()
        blocks = dequantize_b(*scope["w13"]).view(e, i // 128, 2, 128, scope["H"])
        gate, up = blocks[:, :, 0].reshape(e, i, -1), blocks[:, :, 1].reshape(e, i, -1)
        w2, xd, weight = dequantize_b(*scope["w2"]), scope["x"].double(), scope["weight"].double()
        ref = sum(weight[:, g, None] * ((F.silu(xd @ gate[g].t()) * (xd @ up[g].t())) @ w2[g].t()) for g in range(e))
        assert gemmgen.calc_diff(out, ref) < 2e-3
        assert float(capsys.readouterr().out) < 5e-3
    else:
        ref = dequantize_a(scope["a"], scope["sa"]) @ dequantize_a(scope["b"], scope["sb"]).t()
        assert gemmgen.calc_diff(scope["dw"], ref) < 1e-6
