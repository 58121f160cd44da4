"""GPU tier: the weight-gradient GEMM (fp8_gemm_nt_wgrad, scale recipe 1x128/1x128, fp32 out) against a float64
reference of the dequantised inputs, on fresh random inputs; out poisoned with NaN when overwritten, a random C when
accumulated (expect C + ref).

Bound (the fp32-out test's, tests/test_gpu_gemm.py): |out - want| <= 2^-11 max|ref| (the fp32 accumulation with a
128-wide wgmma block promoted per block) + 2^-22 |want| (one fp32 rounding of C + the tile). Both operands' scales
come from `per_token_cast_to_fp8`, so `dequantize_a` reconstructs A and B alike.

SB reaches the kernel two ways (N-major: TMA; any other layout: the producer's gather), and SA too; every pairing
changes the full barrier's arrival count, so each is checked, and all must agree bit for bit (the same scale
values reach the same promotion).
"""

from __future__ import annotations

import pytest
import torch
from shapes import FP8_FP32_OUT_REL, K_GROUPED_CASES, WGRAD_CASES

import gemmgen
from gemmgen.ir import DType, GemmKind, ScaleRecipe
from gemmgen.quant import dequantize_a, is_tma_aligned_scales

pytestmark = pytest.mark.gpu

FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
WGRAD_IDS = [f"{m}x{n}x{k}" + ("-acc" if acc else "") + f"-{a}x{b}" + ("-" + "-".join(f"{f}{v}" for f, v in c.items())
                                                                      if c else "")
             for (m, n, k), acc, c, (a, b) in WGRAD_CASES]


def _operands(m: int, n: int, k: int, a_type: str = "e4m3", b_type: str = "e4m3"):
    seed = torch.seed()  # fresh every run (and returned, for the failure message)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)  # e.g. dY^T: M output features x K tokens
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)  # e.g. X^T: N input features x K tokens
    a, sa = gemmgen.per_token_cast_to_fp8(x, FP8[a_type])
    b, sb = gemmgen.per_token_cast_to_fp8(w, FP8[b_type])  # B's 1x128 scales: [N, ceil(K/128)], N-major
    ref = dequantize_a(a, sa) @ dequantize_a(b, sb).t()
    return seed, a, sa, b, sb, ref


def _start(m: int, n: int, ref: torch.Tensor, accumulate: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The initial out and what it must hold afterwards minus ref: a random C, or NaN poison (unwritten shows)."""
    if accumulate:
        c = torch.randn(m, n, device="cuda", dtype=torch.float32) * float(ref.abs().max())
        return c.clone(), c.double()
    return torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32), torch.zeros_like(ref)


def _assert_close(out: torch.Tensor, want: torch.Tensor, ref: torch.Tensor, seed: int, what: str) -> None:
    assert not out.isnan().any(), f"seed {seed} {what}: {int(out.isnan().sum())} outputs unwritten (NaN left)"
    err = (out.double() - want).abs()
    bound = FP8_FP32_OUT_REL * ref.abs().max() + 2**-22 * want.abs()
    worst = int((err - bound).argmax())
    assert (err <= bound).all(), (f"seed {seed} {what}: {int((err > bound).sum())} elements out of bound; worst at "
                                  f"{divmod(worst, out.shape[1])}: out {out.flatten()[worst].item()} want "
                                  f"{want.flatten()[worst].item()}")


def _run(a, sa, b, sb, start: torch.Tensor, accumulate: bool, config) -> torch.Tensor:
    out = start.clone()
    gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, accumulate=accumulate, config=config)
    torch.cuda.synchronize()
    return out


@pytest.mark.parametrize("shape,accumulate,config,dtypes", WGRAD_CASES, ids=WGRAD_IDS)
def test_wgrad_matches_float64(shape, accumulate: bool, config, dtypes) -> None:
    """Every WGRAD_CASES kernel (partial M/N tiles, a K tail, multicast, one and two accumulator sets, two waves,
    e5m2 either side): against float64, with SA and SB in both of their paths, all four pairings bitwise equal."""
    m, n, k = shape
    seed, a, sa, b, sb, ref = _operands(m, n, k, *dtypes)
    assert is_tma_aligned_scales(sa) and is_tma_aligned_scales(sb), "per_token_cast_to_fp8 gives the TMA layouts"
    kernel = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config, out_dtype=DType.FP32,
                                accumulate=accumulate, a_dtype=DType(dtypes[0]), b_dtype=DType(dtypes[1]),
                                scales=ScaleRecipe.A1x128_B1x128)
    assert "_s1d1d_" in kernel.name and all(getattr(kernel.config, f) == v for f, v in (config or {}).items())
    start, c = _start(m, n, ref, accumulate)
    out = _run(a, sa, b, sb, start, accumulate, config)  # SA and SB by TMA
    _assert_close(out, c + ref, ref, seed, "TMA scales")
    sa_rows, sb_rows = sa.contiguous(), sb.contiguous()  # row-major: gathered by the producer warps
    assert not is_tma_aligned_scales(sb_rows) and not is_tma_aligned_scales(sa_rows)
    for sa_x, sb_x, what in ((sa, sb_rows, "SB gathered"), (sa_rows, sb, "SA gathered"),
                             (sa_rows, sb_rows, "both gathered")):
        assert torch.equal(_run(a, sa_x, b, sb_x, start, accumulate, config), out), f"seed {seed}: {what} differs"
    assert torch.equal(_run(a, sa, b, sb, start, accumulate, config), out), f"seed {seed}: two runs differ (race?)"


@pytest.mark.parametrize("accumulate", [False, True])
def test_wgrad_default_accumulates(accumulate: bool) -> None:
    """accumulate=True is the default (DeepGEMM's wgrad): two calls add twice; accumulate=False overwrites."""
    m, n, k = 512, 1536, 4096
    seed, a, sa, b, sb, ref = _operands(m, n, k)
    start, c = _start(m, n, ref, True)
    out = start.clone()
    if accumulate:
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out)
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out)
        torch.cuda.synchronize()
        _assert_close(out, c + 2 * ref, 2 * ref, seed, "two default calls")
    else:
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, accumulate=False)
        torch.cuda.synchronize()
        _assert_close(out, ref, ref, seed, "accumulate=False over a random C")


def test_wgrad_strided_sb_is_gathered() -> None:
    """SB as a strided view (column stride 2, row stride 2*KB + 3): read through its strides, no copy."""
    m, n, k = 1024, 2048, 4096
    seed, a, sa, b, sb, ref = _operands(m, n, k)
    kb = sb.shape[1]
    wide = torch.zeros(n, 2 * kb + 3, device="cuda")
    wide[:, : 2 * kb : 2] = sb
    view = wide[:, : 2 * kb : 2]
    start, c = _start(m, n, ref, False)
    out = _run(a, sa, b, view, start, False, None)
    _assert_close(out, ref, ref, seed, "strided SB")
    assert torch.equal(out, _run(a, sa, b, sb, start, False, None)), f"seed {seed}: strided and N-major SB differ"


def test_wgrad_bad_gpu_arguments() -> None:
    _, a, sa, b, sb, _ = _operands(256, 256, 256)
    out = torch.zeros(256, 256, device="cuda")
    with pytest.raises(ValueError, match="sb:"):
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb.cpu()), out)
    with pytest.raises(TypeError, match="out:"):
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out.to(torch.bfloat16))


# ---------------------------------------------------------------- k-grouped (groups concatenated along K)

def _ks(groups: int, expected: int, seed: int) -> list[int]:
    """Unequal group sizes in 128-blocks around `expected`, the second group empty (a zero-size group is legal)."""
    gen = torch.Generator().manual_seed(seed)
    ks = [128 * int(torch.randint(1, 2 * expected // 128, (1,), generator=gen)) for _ in range(groups)]
    ks[1 % groups] = 0
    return ks


K_GROUPED_IDS = [f"g{g}-{m}x{n}-k{k}" + ("-acc" if acc else "") + ("-" + "-".join(f"{f}{v}" for f, v in c.items())
                                                                   if c else "")
                 for g, m, n, k, acc, c in K_GROUPED_CASES]


@pytest.mark.parametrize("groups,m,n,k,accumulate,config", K_GROUPED_CASES, ids=K_GROUPED_IDS)
def test_k_grouped_wgrad_matches_float64(groups: int, m: int, n: int, k: int, accumulate: bool, config) -> None:
    """Each group's slice of K against its own float64 product; out [G, M, N] poisoned (overwrite: an empty group
    must come out 0) or a random C (accumulate: C + ref, and an empty group keeps C exactly)."""
    seed = torch.seed()
    ks = _ks(groups, k, seed % 2**31)
    total = sum(ks)
    x = torch.randn(m, total, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, total, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_token_cast_to_fp8(w)
    da, db = dequantize_a(a, sa), dequantize_a(b, sb)
    bounds = [0, *torch.tensor(ks).cumsum(0).tolist()]
    ref = torch.stack([da[:, lo:hi] @ db[:, lo:hi].t() for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)])
    scale = float(ref.abs().max()) or 1.0
    if accumulate:
        c = torch.randn(groups, m, n, device="cuda", dtype=torch.float32) * scale
        out, want = c.clone(), c.double() + ref
    else:
        out, want = torch.full((groups, m, n), float("nan"), device="cuda", dtype=torch.float32), ref
    gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa), (b, sb), out, ks, accumulate=accumulate, config=config)
    torch.cuda.synchronize()
    assert not out.isnan().any(), f"seed {seed} ks {ks}: {int(out.isnan().sum())} outputs unwritten"
    err = (out.double() - want).abs()
    bound = FP8_FP32_OUT_REL * scale + 2**-22 * want.abs()
    assert (err <= bound).all(), f"seed {seed} ks {ks}: {int((err > bound).sum())} out of bound, worst {err.max()}"
    empty = 1 % groups
    if accumulate:
        assert torch.equal(out[empty], c[empty]), f"seed {seed}: the empty group's C changed"
    else:
        assert not out[empty].any(), f"seed {seed}: the empty group is not 0"


@pytest.mark.parametrize("accumulate", [True, False])
def test_k_grouped_all_groups_empty_launch_nothing(accumulate: bool) -> None:
    """Every group with K = 0: no kernel runs (a TMA map cannot describe 0 columns); D += 0 keeps out bit for bit
    and D = 0 zeroes it, through the public call and through a k-grouped kernel called directly alike."""
    m, n, ks = 128, 256, [0, 0, 0]
    a = torch.empty(m, 0, device="cuda", dtype=torch.float8_e4m3fn)
    b = torch.empty(n, 0, device="cuda", dtype=torch.float8_e4m3fn)
    sa = torch.empty(m, 0, device="cuda", dtype=torch.float32)
    sb = torch.empty(n, 0, device="cuda", dtype=torch.float32)
    kern = gemmgen.get_kernel(m, n, 128, gemmgen.api.device_target(0), kind=GemmKind.K_GROUPED, groups=len(ks),
                              out_dtype=DType.FP32, accumulate=accumulate, scales=ScaleRecipe.A1x128_B1x128)
    calls = {"public": lambda out: gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa), (b, sb), out, ks,
                                                                        accumulate=accumulate),
             "kernel": lambda out: kern(a, sa, b, sb, out, ks)}
    for what, call in calls.items():
        c = torch.randn(len(ks), m, n, device="cuda")
        out = c.clone()
        assert call(out) is out, what
        torch.cuda.synchronize()
        assert torch.equal(out, c) if accumulate else not out.any(), f"{what}: accumulate={accumulate}"


def test_k_grouped_row_major_scales_match_tma_scales() -> None:
    """SA and SB gathered (row-major) give the same bits as SA and SB by TMA (their natural layouts)."""
    ks, m, n = [256, 0, 384], 128, 256
    x = torch.randn(m, sum(ks), device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, sum(ks), device="cuda", dtype=torch.bfloat16)
    (a, sa), (b, sb) = gemmgen.per_token_cast_to_fp8(x), gemmgen.per_token_cast_to_fp8(w)
    outs = []
    for sa_, sb_ in ((sa, sb), (sa.contiguous(), sb.contiguous())):
        out = torch.zeros(len(ks), m, n, device="cuda", dtype=torch.float32)
        gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa_), (b, sb_), out, ks)
        outs.append(out)
    torch.cuda.synchronize()
    assert is_tma_aligned_scales(sa) and not is_tma_aligned_scales(sa.contiguous())
    assert torch.equal(outs[0], outs[1])


def test_k_grouped_cuda_graph_replay_and_capture_contract() -> None:
    """A k-grouped call is capturable once its ks have reached the GPU (the offsets stay alive for the graph); a ks
    seen first under capture is refused with a message saying what to do."""
    ks, m, n = [256, 128], 128, 256
    x = torch.randn(m, sum(ks), device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, sum(ks), device="cuda", dtype=torch.bfloat16)
    (a, sa), (b, sb) = gemmgen.per_token_cast_to_fp8(x), gemmgen.per_token_cast_to_fp8(w)
    eager = torch.zeros(len(ks), m, n, device="cuda", dtype=torch.float32)
    gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa), (b, sb), eager, ks)  # warm-up: kernel built, ks on the GPU
    out = torch.zeros_like(eager)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa), (b, sb), out, ks)
    other = [(gemmgen.per_token_cast_to_fp8(x[:, :kk]), gemmgen.per_token_cast_to_fp8(w[:, :kk]), kk)
             for kk in (128, 384)]
    for _ in range(3):  # other group sizes in between must not disturb the captured offsets
        for (a2, sa2), (b2, sb2), kk in other:
            gemmgen.k_grouped_fp8_gemm_nt_wgrad((a2, sa2), (b2, sb2), torch.zeros(1, m, n, device="cuda"), [kk])
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, 3 * eager), "three replays must add the eager result three times"
    with pytest.raises(RuntimeError, match="never used before this CUDA-graph capture"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa), (b, sb), out, [128, 256])


def test_compat_k_grouped_wgrad_in_deepgemm_layout() -> None:
    """gemmgen.compat's k-grouped call on DeepGEMM's layout (each group's [M, k_g] and [N, k_g] chunks flattened one
    after another, scales [sum k_g/128, M or N]) as DeepGEMM's own test builds it, with an empty group and a K that
    is not a multiple of 128: out (a random C) += each group's float64 product, and the empty group's C is kept."""
    import gemmgen.compat as deep_gemm

    seed = torch.seed()
    m, n, ks = 256, 192, [384, 0, 192, 256]
    chunks = [(torch.randn(m, k, device="cuda", dtype=torch.bfloat16), torch.randn(n, k, device="cuda",
                                                                                  dtype=torch.bfloat16)) for k in ks]
    casts = [(gemmgen.per_token_cast_to_fp8(x), gemmgen.per_token_cast_to_fp8(y)) for x, y in chunks if x.shape[1]]
    a = torch.cat([xa.reshape(-1) for (xa, _), _ in casts])
    b = torch.cat([yb.reshape(-1) for _, (yb, _) in casts])
    sa = torch.cat([s.t() for (_, s), _ in casts]).contiguous()  # [sum ceil(k_g/128), M]
    sb = torch.cat([s.t() for _, (_, s) in casts]).contiguous()
    refs = iter([dequantize_a(xa, xs) @ dequantize_a(yb, ys).t() for (xa, xs), (yb, ys) in casts])
    ref = torch.stack([next(refs) if k else torch.zeros(m, n, device="cuda", dtype=torch.float64) for k in ks])
    scale = float(ref.abs().max())
    c = torch.randn(len(ks), m, n, device="cuda") * scale
    out = c.clone()
    deep_gemm.k_grouped_wgrad_gemm_fp8_fp8_fp32_nt((a, sa), (b, sb), out, ks)
    torch.cuda.synchronize()
    want = c.double() + ref
    err = (out.double() - want).abs()
    bound = FP8_FP32_OUT_REL * scale + 2**-22 * want.abs()
    assert (err <= bound).all(), f"seed {seed}: {int((err > bound).sum())} out of bound, worst {err.max()}"
    assert torch.equal(out[1], c[1]), f"seed {seed}: the empty group's C changed"
