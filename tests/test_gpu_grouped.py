"""GPU tier: the MoE grouped GEMMs against a per-group float64 reference of the dequantised inputs, on fresh random
inputs with random group sizes (including empty, single-row and oversized groups), output poisoned first; what the
docs promise for padding rows, rows past masked_m, out-of-range indices and masked_m values; CUDA-graph replay with
new masked_m values; two runs bitwise identical. Bounds as in test_gpu_gemm.py. The bf16 contiguous call against the
float64 product of its bf16 inputs, with the same group sizes and padding checks."""

from __future__ import annotations

import pytest
import torch
from shapes import BF16_GROUPED_CASES, BF16_MASKED_CASES, GROUPED_CONTIGUOUS_CASES, GROUPED_MASKED_CASES

import gemmgen
from gemmgen.quant import calc_diff, dequantize_a, dequantize_b

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _cache(settings, monkeypatch) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))


def _sizes(groups: int, expected: int, gen: torch.Generator, cap: int | None = None) -> list[int]:
    """Rows per group in 0.7..1.3x expected, then one empty group, one single-row group and one of 2x expected."""
    sizes = [int(expected * (0.7 + 0.6 * torch.rand(1, generator=gen).item())) for _ in range(groups)]
    for index, value in zip((0, 1, 2), (0, 1, 2 * expected), strict=True):
        if index < groups:
            sizes[index] = value
    return [min(s, cap) for s in sizes] if cap is not None else sizes


def _weights(groups: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    return w, b, sb


def _check_rows(out: torch.Tensor, a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
                x: torch.Tensor, w: torch.Tensor, what: str) -> None:
    """out [r, N] against the float64 product of one group's dequantised rows (and the unquantised product)."""
    if out.shape[0] == 0:
        return
    assert not out.isnan().any(), f"{what}: {int(out.isnan().sum())} outputs unwritten (NaN poison left)"
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
    err = (out.double() - ref).abs()
    bound = 2**-8 * ref.abs() + 2**-11 * ref.abs().max()
    assert (err <= bound).all(), f"{what}: {int((err > bound).sum())} elements out of bound, worst {err.max():.3g}"
    diff = calc_diff(out, x.double() @ w.double().t())
    assert diff < 1e-3, f"{what}: calc_diff vs the unquantised product {diff:.2e} >= 1e-3"


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16)  # NaN poison compares equal bit for bit


CONTIG_IDS = [f"g{g}-m{m}-n{n}-k{k}" + ("-" + "-".join(f"{a}{v}" for a, v in c.items()) if c else "")
              for g, m, n, k, c in GROUPED_CONTIGUOUS_CASES]


@pytest.mark.parametrize("groups,expected,n,k,config", GROUPED_CONTIGUOUS_CASES, ids=CONTIG_IDS)
def test_contiguous_matches_float64(groups: int, expected: int, n: int, k: int, config) -> None:
    seed = torch.seed()
    gen = torch.Generator().manual_seed(seed)
    counts = _sizes(groups, expected, gen)
    layout = gemmgen.contiguous_layout(counts, device="cuda")
    x = torch.randn(sum(counts), k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(layout.scatter(x))
    w, b, sb = _weights(groups, n, k)
    out = torch.full((layout.m_total, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), out, layout.m_indices, config=config)
    torch.cuda.synchronize()
    if config:
        kern = gemmgen.get_kernel(layout.m_total, n, k, gemmgen.api.device_target(0), config,
                                  kind=gemmgen.GemmKind.M_GROUPED_CONTIGUOUS, groups=groups)
        assert all(getattr(kern.config, f) == v for f, v in config.items()), kern.name
    for g, (count, offset) in enumerate(zip(layout.counts, layout.offsets, strict=True)):
        rows = slice(offset, offset + count)
        _check_rows(out[rows], a[rows], sa[rows], b[g], sb[g], layout.scatter(x)[rows], w[g],
                    f"seed {seed} counts {counts} group {g}")
    padding = layout.m_indices < 0
    assert out[padding].isnan().all(), f"seed {seed}: padding rows of out were written (documented: untouched)"
    # Again with SA row-major (gathered by the producer instead of TMA): bit for bit the same (a race would differ).
    again = torch.full_like(out, float("nan"))
    gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa.contiguous()), (b, sb), again, layout.m_indices, config=config)
    assert torch.equal(_bits(out), _bits(again)), f"seed {seed}: the row-major SA run differs (or a race)"


@pytest.mark.parametrize("block_m", [64, 128])
def test_contiguous_bad_indices_write_nothing_outside(block_m: int) -> None:
    """A segment whose index is -1 or >= G, or a stray index inside a segment: those rows are not written, and
    nothing outside `out` is (out sits inside a poisoned guard buffer). The same for either tile height: a segment's
    expert is its first row's index."""
    groups, n, k, seg = 3, 256, 512, 128
    w, b, sb = _weights(groups, n, k)
    x = torch.randn(5 * seg, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    m_indices = torch.tensor([0] * seg + [-1] * seg + [7] * seg + [2] * 100 + [-1] * 28 + [1] * 64 + [5] + [1] * 63,
                             dtype=torch.int32, device="cuda")
    guard = torch.full((7 * seg, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = guard[seg:6 * seg]
    gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), out, m_indices, config={"block_m": block_m})
    torch.cuda.synchronize()
    assert guard[:seg].isnan().all() and guard[6 * seg:].isnan().all(), "written outside out"
    written = ~out.isnan().all(dim=1)
    valid = (m_indices >= 0) & (m_indices < groups)
    valid[4 * seg + 64] = False  # the stray 5 inside group 1's segment
    assert torch.equal(written, valid), f"rows written {written.nonzero().flatten().tolist()[:8]}..."
    for g, rows in ((0, slice(0, seg)), (2, slice(3 * seg, 3 * seg + 100)), (1, slice(4 * seg, 4 * seg + 64))):
        _check_rows(out[rows], a[rows], sa[rows], b[g], sb[g], x[rows], w[g], f"group {g}")


def _masked_inputs(groups: int, m_max: int, n: int, k: int):
    x = torch.randn(groups, m_max, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    w, b, sb = _weights(groups, n, k)
    return x, a, sa, w, b, sb


def _check_masked(out, x, a, sa, w, b, sb, masked: list[int], what: str) -> None:
    for g, count in enumerate(masked):
        valid = min(max(count, 0), out.shape[1])
        _check_rows(out[g, :valid], a[g, :valid], sa[g, :valid], b[g], sb[g], x[g, :valid], w[g], f"{what} g{g}")
        assert out[g, valid:].isnan().all(), f"{what}: group {g} rows past masked_m={count} were written"


MASKED_IDS = [f"g{g}-mmax{mm}-e{e}-n{n}-k{k}" + ("-" + "-".join(f"{a}{v}" for a, v in c.items()) if c else "")
              for g, mm, e, n, k, c in GROUPED_MASKED_CASES]


@pytest.mark.parametrize("groups,m_max,expected,n,k,config", GROUPED_MASKED_CASES, ids=MASKED_IDS)
def test_masked_matches_float64(groups: int, m_max: int, expected: int, n: int, k: int, config) -> None:
    seed = torch.seed()
    masked = _sizes(groups, expected, torch.Generator().manual_seed(seed), cap=m_max)
    x, a, sa, w, b, sb = _masked_inputs(groups, m_max, n, k)
    masked_m = torch.tensor(masked, dtype=torch.int32, device="cuda")
    out = torch.full((groups, m_max, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, expected, config=config)
    torch.cuda.synchronize()
    _check_masked(out, x, a, sa, w, b, sb, masked, f"seed {seed} masked_m {masked}")
    # Again with SA row-major (gathered by the producer instead of TMA): bit for bit the same (a race would differ).
    again = torch.full_like(out, float("nan"))
    gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa.contiguous()), (b, sb), again, masked_m, expected, config=config)
    assert torch.equal(_bits(out), _bits(again)), f"seed {seed}: the row-major SA run differs (or a race)"


def test_masked_out_of_range_values_are_clamped() -> None:
    """masked_m > M_max computes M_max rows, < 0 computes none; nothing is written outside out."""
    groups, m_max, n, k = 3, 192, 512, 1024
    x, a, sa, w, b, sb = _masked_inputs(groups, m_max, n, k)
    guard = torch.full((groups + 2, m_max, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = guard[1:groups + 1]
    masked = [10**6, -5, 70]
    gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, torch.tensor(masked, dtype=torch.int32,
                                                                            device="cuda"), 100)
    torch.cuda.synchronize()
    assert guard[0].isnan().all() and guard[-1].isnan().all(), "written outside out"
    _check_masked(out, x, a, sa, w, b, sb, masked, "clamped")


def test_masked_cuda_graph_replays_with_new_masked_m() -> None:
    """Captured once; each replay reads the masked_m values the tensor holds at that time (the host never does)."""
    groups, m_max, n, k, expected = 4, 256, 1024, 2048, 128
    x, a, sa, w, b, sb = _masked_inputs(groups, m_max, n, k)
    masked_m = torch.tensor([expected] * groups, dtype=torch.int32, device="cuda")
    out = torch.empty(groups, m_max, n, device="cuda", dtype=torch.bfloat16)
    call = lambda: gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, expected)  # noqa: E731
    call()  # warm-up outside the capture: builds and loads the kernel
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    for masked in ([0, 1, 256, 77], [130, 129, 0, 255], [256, 256, 256, 256]):
        masked_m.copy_(torch.tensor(masked, dtype=torch.int32))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        _check_masked(out, x, a, sa, w, b, sb, masked, f"replay {masked}")


# ---------------------------------------------------------------- bf16 inputs, contiguous layout

def _check_bf16_rows(out: torch.Tensor, a: torch.Tensor, w: torch.Tensor, what: str) -> None:
    """out [r, N] against the float64 product of one expert's bf16 rows and weight. Bound: one bf16 rounding of the
    output (2^-8 |ref|) plus the tensor cores' fp32 accumulation (2^-11 max|ref|), as test_gpu_gemm's bf16 test."""
    if out.shape[0] == 0:
        return
    assert not out.isnan().any(), f"{what}: {int(out.isnan().sum())} outputs unwritten (NaN poison left)"
    ref = a.double() @ w.double().t()
    err = (out.double() - ref).abs()
    bound = 2**-8 * ref.abs() + 2**-11 * ref.abs().max()
    assert (err <= bound).all(), f"{what}: {int((err > bound).sum())} elements out of bound, worst {err.max():.3g}"


BF16_CONTIG_IDS = [f"g{g}-m{m}-n{n}-k{k}" + ("-" + "-".join(f"{a}{v}" for a, v in c.items()) if c else "")
                   for g, m, n, k, c in BF16_GROUPED_CASES]


@pytest.mark.parametrize("groups,expected,n,k,config", BF16_GROUPED_CASES, ids=BF16_CONTIG_IDS)
def test_bf16_contiguous_matches_float64(groups: int, expected: int, n: int, k: int, config) -> None:
    """Group sizes as for FP8 (expert 0 has zero rows, expert 1 one row, expert 2 twice the expected); A's padding
    rows hold random values (not zeros), so a padding row computed and stored would show as a number in the NaN
    poison; a second run is bit for bit the first."""
    seed = torch.seed()
    counts = _sizes(groups, expected, torch.Generator().manual_seed(seed))
    layout = gemmgen.contiguous_layout(counts, device="cuda")
    a = torch.randn(layout.m_total, k, device="cuda", dtype=torch.bfloat16)
    a[layout.rows] = torch.randn(sum(counts), k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16)
    out = torch.full((layout.m_total, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert gemmgen.m_grouped_bf16_gemm_nt_contiguous(a, w, out, layout.m_indices, config=config) is out
    torch.cuda.synchronize()
    kern = gemmgen.get_kernel(layout.m_total, n, k, gemmgen.api.device_target(0), config,
                              kind=gemmgen.GemmKind.M_GROUPED_CONTIGUOUS, groups=groups,
                              a_dtype=gemmgen.ir.DType.BF16, b_dtype=gemmgen.ir.DType.BF16,
                              scales=gemmgen.ir.ScaleRecipe.NONE)
    assert kern.name.startswith("sm90_bf16_bf16_nt_gcontig_"), kern.name
    assert all(getattr(kern.config, f) == v for f, v in (config or {}).items()), kern.name
    for g, (count, offset) in enumerate(zip(layout.counts, layout.offsets, strict=True)):
        rows = slice(offset, offset + count)
        _check_bf16_rows(out[rows], a[rows], w[g], f"seed {seed} counts {counts} expert {g}")
    padding = layout.m_indices < 0
    assert out[padding].isnan().all(), f"seed {seed}: padding rows of out were written (documented: untouched)"
    again = torch.full_like(out, float("nan"))
    gemmgen.m_grouped_bf16_gemm_nt_contiguous(a, w, again, layout.m_indices, config=config)
    assert torch.equal(_bits(out), _bits(again)), f"seed {seed}: a second run differs (a race?)"


@pytest.mark.parametrize("block_m", [64, 128])
def test_bf16_contiguous_bad_indices_write_nothing_outside(block_m: int) -> None:
    """As test_contiguous_bad_indices_write_nothing_outside, with bf16 inputs: segments of -1 or an index >= G are
    skipped, a stray index inside a segment is not written, and nothing outside `out` is (a poisoned guard)."""
    groups, n, k, seg = 3, 256, 512, 128
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16)
    a = torch.randn(5 * seg, k, device="cuda", dtype=torch.bfloat16)
    m_indices = torch.tensor([0] * seg + [-1] * seg + [7] * seg + [2] * 100 + [-1] * 28 + [1] * 64 + [5] + [1] * 63,
                             dtype=torch.int32, device="cuda")
    guard = torch.full((7 * seg, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = guard[seg:6 * seg]
    gemmgen.m_grouped_bf16_gemm_nt_contiguous(a, w, out, m_indices, config={"block_m": block_m})
    torch.cuda.synchronize()
    assert guard[:seg].isnan().all() and guard[6 * seg:].isnan().all(), "written outside out"
    written = ~out.isnan().all(dim=1)
    valid = (m_indices >= 0) & (m_indices < groups)
    valid[4 * seg + 64] = False  # the stray 5 inside expert 1's segment
    assert torch.equal(written, valid), f"rows written {written.nonzero().flatten().tolist()[:8]}..."
    for g, rows in ((0, slice(0, seg)), (2, slice(3 * seg, 3 * seg + 100)), (1, slice(4 * seg, 4 * seg + 64))):
        _check_bf16_rows(out[rows], a[rows], w[g], f"block_m {block_m} expert {g}")


@pytest.mark.parametrize("a_type,b_type", [("e4m3", "e5m2"), ("e5m2", "e5m2")])
def test_grouped_e5m2_inputs_match_float64(a_type: str, b_type: str) -> None:
    """e5m2 A and/or B in both grouped layouts (the tensors' dtypes pick the kernel): each valid row against the
    float64 product of the dequantised inputs, output poisoned; the kernel names carry the dtypes."""
    fp8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    seed = torch.seed()
    groups, n, k, expected = 3, 512, 1024, 200
    counts = _sizes(groups, expected, torch.Generator().manual_seed(seed))
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16)
    b, sb = gemmgen.per_block_cast_to_fp8(w, fp8[b_type])
    layout = gemmgen.contiguous_layout(counts, device="cuda")
    a, sa = gemmgen.per_token_cast_to_fp8(layout.scatter(torch.randn(sum(counts), k, device="cuda")), fp8[a_type])
    out = torch.full((layout.m_total, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), out, layout.m_indices)
    m_max = max(counts)
    am, sam = gemmgen.per_token_cast_to_fp8(torch.randn(groups, m_max, k, device="cuda"), fp8[a_type])
    masked = torch.full((groups, m_max, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.m_grouped_fp8_gemm_nt_masked((am, sam), (b, sb), masked, torch.tensor(counts, dtype=torch.int32,
                                                                                  device="cuda"), expected)
    torch.cuda.synchronize()
    for g, (count, offset) in enumerate(zip(layout.counts, layout.offsets, strict=True)):
        for got, aa, ss in ((out[offset:offset + count], a[offset:offset + count], sa[offset:offset + count]),
                            (masked[g, :count], am[g, :count], sam[g, :count])):
            if count == 0:
                continue
            assert not got.isnan().any(), f"seed {seed} group {g}: outputs unwritten"
            ref = dequantize_a(aa, ss) @ dequantize_b(b[g], sb[g]).t()
            err = (got.double() - ref).abs()
            bound = 2**-8 * ref.abs() + 2**-11 * ref.abs().max()
            assert (err <= bound).all(), f"seed {seed} group {g}: {int((err > bound).sum())} out of bound"
    assert out[layout.m_indices < 0].isnan().all(), f"seed {seed}: padding rows written"
    name = gemmgen.get_kernel(layout.m_total, n, k, gemmgen.api.device_target(0),
                              kind=gemmgen.GemmKind.M_GROUPED_CONTIGUOUS, groups=groups,
                              a_dtype=gemmgen.ir.DType(a_type), b_dtype=gemmgen.ir.DType(b_type)).name
    assert "e5m2" in name, name


# ---------------------------------------------------------------- bf16 inputs, masked layout

BF16_MASKED_IDS = [f"g{g}-mmax{mm}-e{e}-n{n}-k{k}" + ("-" + "-".join(f"{a}{v}" for a, v in c.items()) if c else "")
                   for g, mm, e, n, k, c in BF16_MASKED_CASES]


@pytest.mark.parametrize("groups,m_max,expected,n,k,config", BF16_MASKED_CASES, ids=BF16_MASKED_IDS)
def test_bf16_masked_matches_float64(groups: int, m_max: int, expected: int, n: int, k: int, config) -> None:
    """Group sizes as for FP8 (group 0 empty, group 1 one row, group 2 capped at M_max); A's rows past masked_m hold
    random values, so a row computed and stored past masked_m would show as a number in the NaN poison, and a
    guard around `out` catches writes outside it; a CUDA-graph replay with new masked_m values reads them; a second
    run is bit for bit the first."""
    seed = torch.seed()
    masked = _sizes(groups, expected, torch.Generator().manual_seed(seed), cap=m_max)
    a = torch.randn(groups, m_max, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16)
    masked_m = torch.tensor(masked, dtype=torch.int32, device="cuda")
    guard = torch.full((groups + 2, m_max, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = guard[1:groups + 1]
    assert gemmgen.m_grouped_bf16_gemm_nt_masked(a, w, out, masked_m, expected, config=config) is out
    torch.cuda.synchronize()
    kern = gemmgen.get_kernel(expected, n, k, gemmgen.api.device_target(0), config,
                              kind=gemmgen.GemmKind.M_GROUPED_MASKED, groups=groups,
                              a_dtype=gemmgen.ir.DType.BF16, b_dtype=gemmgen.ir.DType.BF16,
                              scales=gemmgen.ir.ScaleRecipe.NONE)
    assert kern.name.startswith("sm90_bf16_bf16_nt_gmasked_"), kern.name
    assert all(getattr(kern.config, f) == v for f, v in (config or {}).items()), kern.name

    def check(masked: list[int], what: str) -> None:
        assert guard[0].isnan().all() and guard[-1].isnan().all(), f"{what}: written outside out"
        for g, count in enumerate(masked):
            valid = min(max(count, 0), m_max)
            _check_bf16_rows(out[g, :valid], a[g, :valid], w[g], f"{what} group {g}")
            assert out[g, valid:].isnan().all(), f"{what}: group {g} rows past masked_m={count} were written"

    check(masked, f"seed {seed} masked_m {masked}")
    first = out.clone()
    out.fill_(float("nan"))
    gemmgen.m_grouped_bf16_gemm_nt_masked(a, w, out, masked_m, expected, config=config)
    torch.cuda.synchronize()
    assert torch.equal(_bits(out), _bits(first)), f"seed {seed}: a second run differs (a race?)"
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemmgen.m_grouped_bf16_gemm_nt_masked(a, w, out, masked_m, expected, config=config)
    for replay in ([m_max] * groups, [10**6, -3] + [expected // 2] * (groups - 2)):
        masked_m.copy_(torch.tensor(replay, dtype=torch.int32))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check(replay, f"seed {seed} replay {replay}")
