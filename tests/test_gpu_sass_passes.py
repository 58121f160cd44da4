"""GPU tier: a kernel patched by the SASS control-bit passes computes bit for bit what the unpatched one does (the
passes change only scheduling hints), on the kernels where they patch something, and matches the reference."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import gemmgen
from gemmgen.ir import GemmProblem
from gemmgen.quant import calc_diff, dequantize_a, dequantize_b

pytestmark = pytest.mark.gpu

BOTH = ("interleave_ffma", "register_reuse")
# Kernels the passes patch with NVRTC 13.0 (block_m = 64, two accumulator sets; the 32-wide split-K decode tiles,
# e.g. 64x2112x7168, have nothing patched since their main loop spans 4 k-blocks per body). The 64x112 tile is
# pinned: 128x7168x2048 streams a 128-row tile by default, whose promotion ptxas already interleaves.
# 1x7168x16384 is pinned unswapped: swapped (its default since select_config._swap_pays) the main loop promotes 4
# accumulators per k-block and neither pass finds anything to patch.
CASES = [((64, 7168, 2048), None), ((128, 7168, 2048), {"block_m": 64, "block_n": 112}), ((64, 32768, 512), None),
         ((1, 7168, 16384), {"swap_ab": 0})]


@pytest.mark.parametrize("shape,config", CASES, ids=["{}x{}x{}".format(*s) for s, _ in CASES])
def test_patched_kernel_is_bitwise_identical(shape: tuple[int, int, int], config, settings) -> None:
    m, n, k = shape
    problem = GemmProblem(m, n, k)
    plain = gemmgen.build(problem, config, settings=dataclasses.replace(settings, sass_passes=()))
    patched = gemmgen.build(problem, config, settings=dataclasses.replace(settings, sass_passes=BOTH))
    assert patched.name == plain.name and patched.cubin != plain.cubin
    assert sum(patched.meta["sass_passes"]["patches"].values()) > 0, "nothing patched: the test proves nothing"
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    outs = []
    for kern in (plain, patched):
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        kern(a, sa, b, sb, out)
        torch.cuda.synchronize()
        outs.append(out)
    assert torch.equal(outs[0], outs[1]), "patched kernel output differs from the unpatched kernel"
    ref = dequantize_a(a, sa).double() @ dequantize_b(b, sb).double().T
    assert not outs[1].isnan().any()
    assert calc_diff(outs[1], ref) < 1e-5
