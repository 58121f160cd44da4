"""GPU tier: programmatic dependent launch (gemmgen.pdl / GemmConfig.pdl). A PDL kernel may start while the previous
kernel in the stream still runs, so these tests put a kernel that is still writing the same output right before it:
without its griddepcontrol.wait, the later kernel's tiles would land first and be overwritten (or be added to a
partial sum). Outputs are poisoned first; results are compared bit for bit with the same calls without PDL, and
against a float64 reference."""

from __future__ import annotations

import pytest
import torch
from shapes import FP8_FP32_OUT_REL

import gemmgen
from gemmgen.quant import dequantize_a, dequantize_b

pytestmark = pytest.mark.gpu

# The first kernel: long (K = 7168) on a grid capped at 100 SMs, so the second kernel's CTAs find free SMs and start
# while the first is still storing its tiles. The second: the same out, K = 256.
M, N, K_LONG, K_SHORT = 4096, 4096, 7168, 256


def _operands(m: int, n: int, k: int):
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    return gemmgen.per_token_cast_to_fp8(x), gemmgen.per_block_cast_to_fp8(w)


def _reference(a, b) -> torch.Tensor:
    return dequantize_a(*a) @ dequantize_b(*b).t()


@pytest.fixture
def cache(settings, monkeypatch):
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))


def test_pdl_kernels_are_pdl_kernels(cache) -> None:
    target = gemmgen.api.device_target(0)
    on = gemmgen.get_kernel(M, N, K_SHORT, target, {"pdl": 1})
    off = gemmgen.get_kernel(M, N, K_SHORT, target)
    assert on.name == off.name + "_pdl" and on.kernel.plan.launch.pdl and not off.kernel.plan.launch.pdl
    assert "ACQBULK" in on.sass and "PREEXIT" in on.sass, "griddepcontrol.wait / launch_dependents not in the SASS"
    assert "ACQBULK" not in off.sass


@pytest.mark.parametrize("graph", [False, True], ids=["stream", "cuda_graph"])
def test_pdl_second_kernel_waits_for_the_first_one_writing_the_same_out(cache, graph: bool) -> None:
    a1, b1 = _operands(M, N, K_LONG)
    a2, b2 = _operands(M, N, K_SHORT)
    plain = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt(a2, b2, plain)  # the second call alone, without PDL
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)

    def both() -> None:
        with gemmgen.pdl():
            gemmgen.fp8_gemm_nt(a1, b1, out, config={"num_sms": 100, "pdl": 1})
            gemmgen.fp8_gemm_nt(a2, b2, out)

    both()  # builds both kernels
    torch.cuda.synchronize()
    for _ in range(3):
        out.fill_(float("nan"))
        if graph:
            g = torch.cuda.CUDAGraph()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream), torch.cuda.graph(g, stream=stream):
                both()
            torch.cuda.current_stream().wait_stream(stream)
            out.fill_(float("nan"))
            g.replay()
        else:
            both()
        torch.cuda.synchronize()
        wrong = int((out != plain).sum())
        assert wrong == 0, f"{wrong} of {M * N} outputs differ from the second call alone (a write of the first won)"
    ref = _reference(a2, b2)
    assert ((out.double() - ref).abs() <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all()


def test_pdl_accumulating_kernel_adds_to_the_finished_sum(cache) -> None:
    """out (fp32) = A1.B1^T, then out += A2.B2^T, both PDL: the second kernel's reduce-adds must land on the first's
    finished tiles, so the result equals the same two calls without PDL bit for bit."""
    a1, b1 = _operands(M, N, K_LONG)
    a2, b2 = _operands(M, N, K_SHORT)

    def run(pdl: bool) -> torch.Tensor:
        out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
        with gemmgen.pdl(pdl):
            gemmgen.fp8_gemm_nt(a1, b1, out, config={"num_sms": 100})
            gemmgen.fp8_gemm_nt(a2, b2, out, accumulate=True)
        torch.cuda.synchronize()
        return out

    plain = run(False)
    for _ in range(3):
        got = run(True)
        wrong = int((got != plain).sum())
        assert wrong == 0, f"{wrong} of {M * N} sums differ from the calls without PDL"
    ref = _reference(a1, b1) + _reference(a2, b2)
    assert not plain.isnan().any()
    assert ((plain.double() - ref).abs() <= FP8_FP32_OUT_REL * ref.abs().max() * 2).all()


def test_pdl_masked_grouped_reads_the_group_sizes_written_before_it(cache) -> None:
    """The masked kernel reads masked_m on the device: rewritten by the kernel right before a PDL launch, the new
    sizes must be the ones used (rows past them stay poisoned)."""
    groups, m_max, n, k = 4, 256, 4096, 7168
    x = torch.randn(groups, m_max, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16))
    masked_m = torch.zeros(groups, device="cuda", dtype=torch.int32)
    sizes = [200, 0, 256, 17]
    out = torch.full((groups, m_max, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    with gemmgen.pdl():
        gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, 192)  # built; every group empty
        torch.cuda.synchronize()
        assert out.isnan().all(), "a group of 0 rows was written"
        masked_m.copy_(torch.tensor(sizes, dtype=torch.int32))  # the kernel right before the PDL launch
        gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, 192)
    torch.cuda.synchronize()
    for g, rows in enumerate(sizes):
        assert out[g, rows:].isnan().all(), f"group {g}: rows past masked_m = {rows} written"
        if rows:
            ref = _reference((a[g, :rows], sa[g, :rows]), (b[g], sb[g]))
            got = out[g, :rows].double()
            assert ((got - ref).abs() <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all(), f"group {g}"
