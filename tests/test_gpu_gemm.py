"""GPU tier: numerics of fp8_gemm_nt against a float64 reference, on fresh random inputs, output poisoned first.

Bounds (stated once, used everywhere):
- against the float64 product of the *dequantised* inputs (what the kernel computes exactly, up to rounding):
  |out - ref| <= 2^-8 |ref| + 2^-11 max|ref| element-wise. 2^-8 is one bf16 ulp of the output (round-to-nearest
  is half of that; the other half covers an accumulation error that moves the rounding), and 2^-11 max|ref|
  bounds the fp32 accumulation with a 128-wide wgmma block promoted per block (docs/TOOLCHAIN.md: ~1e-4 measured).
- against the unquantised product, DeepGEMM's calc_diff < 1e-3 (every implementation measured sits at ~6.8e-4).
"""

from __future__ import annotations

import pytest
import torch
from shapes import BF16_CASES, CONFIG_CASES, E5M2_CASES, FP8_FP32_OUT_REL, FP32_OUT_CASES, GPU_SHAPES, RECIPE_CASES

import gemmgen
from gemmgen.quant import calc_diff, dequantize_a, dequantize_b
from gemmgen.sass.parse import parse
from gemmgen.tuning.space import row_fields

pytestmark = pytest.mark.gpu


def _inputs(m: int, n: int, k: int) -> tuple[int, torch.Tensor, torch.Tensor]:
    seed = torch.seed()  # fresh every run (and returned, for the failure message)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    return seed, x, w


def _run(a, sa, b, sb, m: int, n: int, config: dict[str, int] | None = None) -> torch.Tensor:
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)  # poison: unwritten shows
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, config=config)
    torch.cuda.synchronize()
    return out


@pytest.mark.parametrize("m,n,k", GPU_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in GPU_SHAPES])
def test_fp8_gemm_nt_matches_float64(m: int, n: int, k: int, settings, monkeypatch) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))
    _check_against_float64(m, n, k, None)


CASE_IDS = ["{}x{}x{}-".format(*s) + "-".join(f"{k}{v}" for k, v in c.items()) for s, c in CONFIG_CASES]


@pytest.mark.parametrize("shape,config", CONFIG_CASES, ids=CASE_IDS)
def test_forced_schedules_match_float64(shape, config, settings, monkeypatch) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))
    kernel = gemmgen.get_kernel(*shape, gemmgen.api.device_target(0), config)
    assert all(getattr(kernel.config, k) == v for k, v in config.items()), kernel.name
    _check_against_float64(*shape, config)


def _check_against_float64(m: int, n: int, k: int, config: dict[str, int] | None) -> None:
    seed, x, w = _inputs(m, n, k)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    out = _run(a, sa, b, sb, m, n, config)
    assert not out.isnan().any(), f"seed {seed}: {int(out.isnan().sum())} outputs unwritten (NaN poison left)"
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
    err = (out.double() - ref).abs()
    bound = 2**-8 * ref.abs() + 2**-11 * ref.abs().max()
    worst = int((err - bound).argmax())
    got, want = out.flatten()[worst].item(), ref.flatten()[worst].item()
    assert (err <= bound).all(), (f"seed {seed}: {int((err > bound).sum())} elements out of bound; worst at "
                                  f"{divmod(worst, n)}: out {got} ref {want}")
    diff = calc_diff(out, x.double() @ w.double().t())
    assert diff < 1e-3, f"seed {seed}: calc_diff vs the unquantised product {diff:.2e} >= 1e-3"
    again = _run(a, sa, b, sb, m, n, config)
    assert torch.equal(out, again), f"seed {seed}: two runs on the same inputs differ (a race?)"


def _fp8(m: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    return gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))


def test_one_kernel_with_new_pointers_and_rows_every_call() -> None:
    """The launcher keeps one parameter block per device and rewrites only what changed (a new address is one word
    of a learned tensor map; new rows re-write the map): calls with new A/SA/out buffers, a different M, SA in the
    TMA layout or row-major (gathered: its map is not read), and a return to an earlier call's buffers, all queued
    before one sync, each match their own inputs' float64 product."""
    n, k = 1024, 2048
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    kern = gemmgen.get_kernel(256, n, k, gemmgen.api.device_target(0))
    calls = []
    for m, row_major in [(256, False), (200, False), (200, True), (37, False), (256, True), (129, False)]:
        a, sa = _fp8(m, k)
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        calls.append((a, sa.contiguous() if row_major else sa, out))
    calls.append(calls[1])  # back to the second call's buffers (the block's maps hold the sixth's by then)
    for a, sa, out in calls:
        out.fill_(float("nan"))
        kern(a, sa, b, sb, out)
    torch.cuda.synchronize()
    for i, (a, sa, out) in enumerate(calls):
        ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
        err = (out.double() - ref).abs()
        assert not out.isnan().any() and (err <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all(), f"call {i}"


def test_fast_call_with_new_pointers_layouts_weights_and_streams() -> None:
    """fp8_gemm_nt's common call writes only addresses and SA's strides into its DenseCall's own block: queued calls
    on new A/SA/out buffers, SA first row-major (its tensor map never written), then in the TMA layout (written
    now), then row-major again, a new weight tensor, a side stream, and a return to the first buffers, each match
    their own inputs' float64 product."""
    m, n, k = 40, 1024, 2048  # an M no other test calls, so the first call here creates the DenseCall
    weights = [gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda")) for _ in range(2)]
    calls = []
    for row_major, weight in [(True, 0), (False, 0), (True, 0), (False, 1), (False, 0)]:
        a, sa = _fp8(m, k)
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        calls.append((a, sa.contiguous() if row_major else sa, *weights[weight], out))
    calls.append(calls[0])
    key = (m, n, k, 0)
    gemmgen.api._FAST_CALLS.pop(key, None)
    side = torch.cuda.Stream()
    for i, (a, sa, b, sb, out) in enumerate(calls):
        out.fill_(float("nan"))
        if i == 4:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
            torch.cuda.current_stream().wait_stream(side)
        else:
            gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    torch.cuda.synchronize()
    assert key in gemmgen.api._FAST_CALLS and gemmgen.api._FAST_CALLS[key].words is not None  # the fast writes ran
    for i, (a, sa, b, sb, out) in enumerate(calls):
        ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
        err = (out.double() - ref).abs()
        assert not out.isnan().any() and (err <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all(), f"call {i}"


def test_fast_calls_captured_in_one_graph_keep_their_own_pointers() -> None:
    """Two common calls on different buffers captured in one CUDA graph: the launch copies the parameter block, so
    replaying (after new inputs are written into the same buffers) computes each call on its own buffers."""
    m, n, k = 48, 1024, 2048
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    sets = [(*_fp8(m, k), torch.empty(m, n, device="cuda", dtype=torch.bfloat16)) for _ in range(2)]
    for a, sa, out in sets:
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)  # the warm-up (loads the kernel)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for a, sa, out in sets:
            gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    for a, sa, out in sets:
        fresh_a, fresh_sa = _fp8(m, k)
        a.copy_(fresh_a)
        sa.copy_(fresh_sa)
        out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    for i, (a, sa, out) in enumerate(sets):
        ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
        err = (out.double() - ref).abs()
        assert not out.isnan().any() and (err <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all(), f"set {i}"


def test_decode_kernel_refuses_more_rows_than_it_loads() -> None:
    """A decode kernel loads only a_rows rows of A per tile: called directly with more, it refuses (the public call
    picks a kernel for its M); with fewer it computes them."""
    target = gemmgen.api.device_target(0)
    kern = gemmgen.get_kernel(1, 2112, 7168, target, {"swap_ab": 0})  # the unswapped decode kernel (8-row slots)
    assert kern.config.a_rows == 8, kern.name
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(2112, 7168, device="cuda"))
    a, sa = _fp8(9, 7168)
    out = torch.full((9, 2112), float("nan"), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="a: this kernel loads 8 rows"):
        kern(a, sa, b, sb, out)
    a, sa = _fp8(5, 7168)
    out = torch.full((5, 2112), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, sa, b, sb, out)
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
    assert ((out.double() - ref).abs() <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all()


@pytest.mark.parametrize("m,n,k", [(5, 2112, 7168), (3, 512, 1024), (20, 7168, 2048), (40, 7168, 2048),
                                   (80, 2112, 7168), (100, 4096, 7168)])
def test_decode_rows_past_m_are_not_written(m: int, n: int, k: int) -> None:
    """A decode kernel computes garbage in the accumulator rows past a_rows (wgmma reads what follows the A slot):
    none of them, nor any row past M, may reach memory. `out` is the first M rows of a NaN-filled buffer."""
    a, sa = _fp8(m, k)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    big = torch.full((m + 11, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    # one M block of a small-slot kernel (the search may take two 64-row blocks above M = 64: pinned here)
    config = {"block_m": 128, "k_splits": 1, "swap_ab": 0} if m > 64 else None
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), big[:m], config=config)
    torch.cuda.synchronize()
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config)
    # the small-slot kernel is what this checks, or (M <= 16 at 2112 wide) the swapped one, whose token columns past
    # M hold the same garbage
    assert kern.config.load_rows < kern.config.block_m or kern.config.swap_ab, kern.name
    assert not big[:m].isnan().any(), "rows inside M left unwritten"
    assert big[m:].isnan().all(), f"{int((~big[m:].isnan()).sum())} elements past M were written"


# The last M block's A box shifted to end at M (plan_kernel.a_tail_shift): the largest shift (8 rows of a 128-row
# block), a tail of 9 rows (the box ends 7 rows past M), 64-row tiles with 8 and 44 rows, a 128x160 tile with 8
# rows, A multicast, split-K, and the last slot's 120-row over-read ending on the last byte of B's stages.
TAIL_CASES = [
    ((136, 7168, 2048), {"block_m": 128, "block_n": 128, "stages": 5}),
    ((137, 7168, 2048), {"block_m": 128, "block_n": 128, "stages": 5}),
    ((200, 2112, 7168), {"block_m": 64, "block_n": 64, "stages": 8}),
    ((300, 4096, 7168), {"block_m": 64, "block_n": 160, "stages": 7}),
    ((520, 7168, 2048), {"block_m": 128, "block_n": 160, "stages": 5}),
    ((1032, 4096, 7168), {"block_m": 128, "block_n": 160, "cluster": 2}),
    ((136, 2112, 7168), {"block_m": 128, "block_n": 32, "k_splits": 2}),
    ((136, 512, 1024), {"block_m": 128, "block_n": 40, "stages": 3}),  # the over-read ending on B's last byte
]


@pytest.mark.parametrize("shape,config", TAIL_CASES, ids=["{}x{}x{}".format(*s) for s, _ in TAIL_CASES])
def test_shifted_last_m_block(shape, config) -> None:
    """Against float64; nothing written past M (`out` is the first M rows of a NaN-filled buffer); and each row is
    the same bits as the same kernel gives it at the next whole multiple of block_m (the rows above the tile that
    the shifted box loads change nothing but where the tile's rows sit in the slot)."""
    m, n, k = shape
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config)
    assert kern.kernel.plan.a_tail_shift and m % kern.config.block_m, kern.name
    full = -(-m // kern.config.block_m) * kern.config.block_m
    same = row_fields(kern.kernel)  # every field of this kernel pinned: M = full runs the very same kernel
    assert gemmgen.get_kernel(full, n, k, gemmgen.api.device_target(0), same).name == kern.name
    x = torch.randn(full, k, device="cuda")
    a, sa = gemmgen.per_token_cast_to_fp8(x[:m])  # per row: the first M rows of `x`'s quantisation, SA in TMA layout
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    big = torch.full((m + 11, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), big[:m], config=config)
    whole = _run(*gemmgen.per_token_cast_to_fp8(x), b, sb, full, n, same)
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
    out = big[:m]
    assert not out.isnan().any(), "rows inside M left unwritten"
    assert big[m:].isnan().all(), f"{int((~big[m:].isnan()).sum())} elements past M were written"
    assert ((out.double() - ref).abs() <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all(), kern.name
    assert torch.equal(out, whole[:m]), f"{int((out != whole[:m]).sum())} elements differ from M = {full}'s"


def test_fast_path_matches_the_full_checks() -> None:
    """The common call takes validate.fast_dense; naming the recipe takes the full checks: one kernel, same bits."""
    from gemmgen.runtime import validate

    a, sa = _fp8(37, 2048)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(1024, 2048, device="cuda"))
    assert validate.fast_dense((a, sa), (b, sb), torch.empty(37, 1024, device="cuda", dtype=torch.bfloat16))
    fast = _run(a, sa, b, sb, 37, 1024)
    full = torch.full((37, 1024), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), full, recipe="1x128/128x128")
    torch.cuda.synchronize()
    assert torch.equal(fast, full) and not fast.isnan().any()
    rows = sa.contiguous()  # row-major SA: the fast path too, gathered by the same kernel
    assert validate.fast_dense((a, rows), (b, sb), full)[6] == 0  # sa_tma
    gathered = _run(a, rows, b, sb, 37, 1024)
    assert torch.equal(gathered, full)


@pytest.mark.parametrize("m,n,k,block_n", [(13, 1000, 2320, 16), (32, 24576, 1536, 32)])
def test_swap_ab_row_major_sa_and_too_many_rows(m: int, n: int, k: int, block_n: int) -> None:
    """A and B swapped (experimental): SA row-major is gathered by block_n / 4 producer threads (the tokens' rows) and
    gives the TMA layout's bits, with one tile per CTA (N = 1000) and several (N = 24576: 384 tiles); both agree with
    the float64 reference within the check's bound; a swapped kernel called with more tokens than its block_n
    columns refuses, naming a."""
    a, sa = _fp8(m, k)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    swap = {"swap_ab": 1}
    tma = _run(a, sa, b, sb, m, n, swap)
    gathered = _run(a, sa.contiguous(), b, sb, m, n, swap)
    assert not tma.isnan().any() and torch.equal(tma, gathered)
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
    assert ((tma.double() - ref).abs() <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all()
    kernel = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), swap)
    assert kernel.config.block_n == block_n and "_swab" in kernel.name
    more, s_more = _fp8(block_n + 1, k)
    with pytest.raises(ValueError, match=f"a: this kernel loads {block_n} rows"):
        kernel(more, s_more, b, sb, torch.empty(block_n + 1, n, device="cuda", dtype=torch.bfloat16))


def test_m_zero_returns_without_launch() -> None:
    a, sa = _fp8(0, 256)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(128, 256, device="cuda"))
    out = torch.empty(0, 128, device="cuda", dtype=torch.bfloat16)
    assert gemmgen.fp8_gemm_nt((a, sa), (b, sb), out) is out
    assert not gemmgen.api._KERNELS or all(key[0] != 0 for key in gemmgen.api._KERNELS)


@pytest.mark.parametrize("m,n,k", [(200, 256, 384), (1, 2112, 7168), (32, 4096, 7168), (4097, 4104, 7296)])
def test_scales_in_any_layout_one_kernel(m: int, n: int, k: int) -> None:
    """SA row-major (the natural layout), M-major with padding, or strided: bit-identical results and one kernel per
    call (the producer gathers SA through its strides: no conversion kernel)."""
    a, sa = _fp8(m, k)  # M-major, M stride rounded up to 4 (per_token_cast_to_fp8's layout)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    ref = _run(a, sa, b, sb, m, n)
    wide = torch.zeros(m, 2 * sa.shape[1] + 3, device="cuda")  # a strided view: row stride 2 KB + 3, column stride 2
    wide[:, : 2 * sa.shape[1] : 2] = sa
    for layout in (sa.contiguous(), wide[:, : 2 * sa.shape[1] : 2]):
        assert torch.equal(_run(a, layout, b, sb, m, n), ref)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    row_major = sa.contiguous()
    gemmgen.fp8_gemm_nt((a, row_major), (b, sb), out)  # warm: the kernel is loaded outside the profile
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        gemmgen.fp8_gemm_nt((a, row_major), (b, sb), out)
        torch.cuda.synchronize()
    kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert len(kernels) == 1 and kernels[0].startswith("sm90_"), kernels


@pytest.mark.parametrize("case", ["cpu_sa", "noncontiguous_out", "misaligned_a", "wrong_n"])
def test_bad_gpu_arguments(case: str) -> None:
    a, sa = _fp8(64, 256)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(128, 256, device="cuda"))
    out = torch.empty(64, 128, device="cuda", dtype=torch.bfloat16)
    if case == "cpu_sa":
        sa, word = sa.cpu(), "sa:"
    elif case == "noncontiguous_out":
        out, word = torch.empty(128, 64, device="cuda", dtype=torch.bfloat16).t(), "out:"
    elif case == "misaligned_a":
        raw = torch.empty(64 * 256 + 8, device="cuda", dtype=torch.uint8)
        a, word = raw[8:].view(torch.float8_e4m3fn).view(64, 256), "a:"
    else:
        out, word = torch.empty(64, 120, device="cuda", dtype=torch.bfloat16), "out:"
    with pytest.raises(ValueError, match=word):
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)


def test_tensor_map_templates_hold_on_this_driver() -> None:
    """New activation/output pointers are written into a learned template instead of re-encoded; the template
    must reproduce this driver's encode byte for byte (else every call pays ~3.6 us per map, still correct)."""
    from gemmgen.runtime import cdriver
    from gemmgen.runtime.launch import ParamBlock

    a, sa = _fp8(64, 2048)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(7168, 2048, device="cuda"))
    out = torch.empty(64, 7168, device="cuda", dtype=torch.bfloat16)
    kern = gemmgen.get_kernel(64, 7168, 2048, gemmgen.api.device_target(0))
    kern(a, sa, b, sb, out)
    block = ParamBlock(kern.kernel.plan)
    env = {"m": 64, "g": 1, "a_ld": 2048, "a_rows": 64, "b_ld": 2048, "b_rows": 7168, "out_ld": 7168, "out_rows": 64}
    for _source, _dst, m, encoder in block.maps:
        for padded in (env, {**env, "a_ld": 2176, "out_ld": 7232}):  # contiguous, and a padded K and wider out
            sizes = cdriver.MapEncoder.sizes(m.dims[0].value(padded), m.dims[1].value(padded),
                                             m.row_stride.value(padded))
            assert cdriver.MapTemplate(encoder, sizes).ok, f"{m.param}: the driver's map layout was not reproduced"


FP32_IDS = [f"{m}x{n}x{k}" + ("-acc" if acc else "") + ("-" + "-".join(f"{a}{v}" for a, v in c.items()) if c else "")
            for (m, n, k), acc, c in FP32_OUT_CASES]


@pytest.mark.parametrize("shape,accumulate,config", FP32_OUT_CASES, ids=FP32_IDS)
def test_fp32_out_and_accumulate_match_float64(shape, accumulate: bool, config) -> None:
    """FP32 D against the float64 product of the dequantised inputs: the bound is the fp32 accumulation's alone
    (2^-11 max|ref|, no bf16 rounding); accumulating, out starts as a random C and must end as C + ref."""
    m, n, k = shape
    seed, x, w = _inputs(m, n, k)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
    c = torch.randn(m, n, device="cuda", dtype=torch.float32) * float(ref.abs().max())
    out = c.clone() if accumulate else torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, accumulate=accumulate, config=config)
    torch.cuda.synchronize()
    want = ref + (c.double() if accumulate else 0.0)
    assert not out.isnan().any(), f"seed {seed}: outputs unwritten"
    err = (out.double() - want).abs()
    bound = FP8_FP32_OUT_REL * ref.abs().max() + 2**-22 * want.abs()  # + one fp32 rounding of the sum
    assert (err <= bound).all(), f"seed {seed}: {int((err > bound).sum())} elements out of bound, worst {err.max()}"
    if accumulate:  # a second call adds again: 2 * ref + C
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, accumulate=True, config=config)
        torch.cuda.synchronize()
        assert ((out.double() - ref - want).abs() <= 2 * bound).all(), f"seed {seed}: the second add is off"


def test_accumulate_needs_fp32_out() -> None:
    a, sa = _fp8(64, 256)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(128, 256, device="cuda"))
    out = torch.zeros(64, 128, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="accumulate"):
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, accumulate=True)


@pytest.mark.parametrize("shape,a_type,b_type", E5M2_CASES,
                         ids=[f"{m}x{n}x{k}-{a}x{b}" for (m, n, k), a, b in E5M2_CASES])
def test_e5m2_inputs_match_float64(shape, a_type: str, b_type: str) -> None:
    """A and/or B in e5m2 (the dtype of each tensor picks the wgmma operand type), against the float64 product of
    the dequantised inputs, output poisoned first; the same bound as e4m3 (the error is the accumulation's)."""
    m, n, k = shape
    fp8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    seed, x, w = _inputs(m, n, k)
    a, sa = gemmgen.per_token_cast_to_fp8(x, fp8[a_type])
    b, sb = gemmgen.per_block_cast_to_fp8(w, fp8[b_type])
    out = _run(a, sa, b, sb, m, n)
    assert not out.isnan().any(), f"seed {seed}: outputs unwritten"
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
    err = (out.double() - ref).abs()
    bound = 2**-8 * ref.abs() + 2**-11 * ref.abs().max()
    assert (err <= bound).all(), f"seed {seed}: {int((err > bound).sum())} elements out of bound"
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), a_dtype=gemmgen.ir.DType(a_type),
                              b_dtype=gemmgen.ir.DType(b_type))
    assert a_type in kern.name and "QGMMA" in kern.sass


RECIPE_IDS = [f"{m}x{n}x{k}-{r}-{o}" + ("-" + "-".join(f"{a}{v}" for a, v in c.items()) if c else "")
              for (m, n, k), r, o, c in RECIPE_CASES]


@pytest.mark.parametrize("shape,recipe,out_dtype,config", RECIPE_CASES, ids=RECIPE_IDS)
def test_tensor_and_channel_recipes_match_float64(shape, recipe: str, out_dtype: str, config) -> None:
    """Per-tensor and per-channel scales, against the float64 product of the dequantised inputs, output poisoned
    (fp32 out: accumulated onto a random C). These recipes accumulate the whole K in wgmma with no per-block
    promotion (cuBLASLt's fast accumulate does the same), and FP8 wgmma accumulates with less than fp32 precision
    (DeepSeek-V3 report, section 3.3.2: ~14 bits), so the bound is 2^-7 max|ref| on top of the output's rounding:
    measured on the H200 (bench/results/2026-11-30-36df5df) 2.9e-3 max|ref| with fp32 out at K=2320 and up to 5.0e-3
    with bf16 out at K=16384. A lost k-block or a wrong scale is off by a large fraction of |ref| and fails."""
    m, n, k = shape
    seed, x, w = _inputs(m, n, k)
    cast = gemmgen.per_tensor_cast_to_fp8 if recipe == "tensor" else gemmgen.per_channel_cast_to_fp8
    (a, sa), (b, sb) = cast(x), cast(w)
    ref = (a.double() * (sa.double() if recipe == "tensor" else sa.double()[:, None])) @ \
        (b.double() * (sb.double() if recipe == "tensor" else sb.double()[:, None])).t()
    fp32 = out_dtype == "fp32"
    c = torch.randn(m, n, device="cuda", dtype=torch.float32) * float(ref.abs().max()) if fp32 else None
    out = c.clone() if fp32 else torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, accumulate=fp32, config=config)  # recipe inferred from the shapes
    torch.cuda.synchronize()
    assert not out.isnan().any(), f"seed {seed}: {int(out.isnan().sum())} outputs unwritten"
    want = ref + (c.double() if fp32 else 0.0)
    err = (out.double() - want).abs()
    bound = (2**-22 if fp32 else 2**-8) * want.abs() + 2**-7 * ref.abs().max()
    print(f"{shape} {recipe}: max err / max|ref| = {float(err.max() / ref.abs().max()):.2e}")
    assert (err <= bound).all(), f"seed {seed}: {int((err > bound).sum())} elements out of bound, worst {err.max()}"
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config,
                              out_dtype=gemmgen.ir.DType(out_dtype), accumulate=fp32,
                              scales=gemmgen.ir.ScaleRecipe(recipe))
    assert f"_s{recipe}_" in kern.name and "FFMA" not in {i.base_opcode for i in parse(kern.sass)}


def test_recipe_named_must_match_the_scale_shapes() -> None:
    a, sa = gemmgen.per_tensor_cast_to_fp8(torch.randn(64, 256, device="cuda"))
    b, sb = gemmgen.per_tensor_cast_to_fp8(torch.randn(128, 256, device="cuda"))
    out = torch.empty(64, 128, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="sa"):
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, recipe="channel")


BF16_IDS = [f"{m}x{n}x{k}-{o}" + ("-acc" if acc else "")
            + ("-" + "-".join(f"{a}{v}" for a, v in c.items()) if c else "") for (m, n, k), o, acc, c in BF16_CASES]


@pytest.mark.parametrize("shape,out_dtype,accumulate,config", BF16_CASES, ids=BF16_IDS)
def test_bf16_gemm_matches_float64(shape, out_dtype: str, accumulate: bool, config) -> None:
    """bf16 inputs, FP32 accumulation over the whole K: against the float64 product, output poisoned (or a random C
    accumulated onto). Bound: one bf16 rounding of the output (2^-8 |ref|, or fp32's 2^-22) plus the tensor cores'
    fp32 accumulation (2^-11 max|ref|, as for FP8)."""
    m, n, k = shape
    seed, x, w = _inputs(m, n, k)
    ref = x.double() @ w.double().t()
    fp32 = out_dtype == "fp32"
    c = torch.randn(m, n, device="cuda", dtype=torch.float32) * float(ref.abs().max()) if accumulate else None
    out = c.clone() if c is not None else torch.full((m, n), float("nan"), device="cuda",
                                                     dtype=torch.float32 if fp32 else torch.bfloat16)
    gemmgen.bf16_gemm_nt(x, w, out, accumulate=accumulate, config=config)
    torch.cuda.synchronize()
    assert not out.isnan().any(), f"seed {seed}: {int(out.isnan().sum())} outputs unwritten"
    want = ref + (c.double() if c is not None else 0.0)
    err = (out.double() - want).abs()
    bound = (2**-22 if fp32 else 2**-8) * want.abs() + 2**-11 * ref.abs().max()
    print(f"{shape} bf16: max err / max|ref| = {float(err.max() / ref.abs().max()):.2e}")
    assert (err <= bound).all(), f"seed {seed}: {int((err > bound).sum())} elements out of bound, worst {err.max()}"
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config, out_dtype=gemmgen.ir.DType(out_dtype),
                              accumulate=accumulate, a_dtype=gemmgen.ir.DType.BF16, b_dtype=gemmgen.ir.DType.BF16,
                              scales=gemmgen.ir.ScaleRecipe.NONE)
    assert kern.name.startswith("sm90_bf16_") and "HGMMA" in {i.base_opcode for i in parse(kern.sass)}


@pytest.mark.parametrize("recipe,config", [
    ("none", {"pingpong": 1, "block_m": 128, "block_n": 128, "num_sms": 7}),
    ("block", {"pingpong": 1, "block_m": 128, "block_n": 128, "num_sms": 7}),
], ids=["pingpong1-bf16", "pingpong1-block"])
def test_pingpong_runs_are_bitwise_equal(recipe: str, config) -> None:
    """The ping-pong consumer over a 7-CTA grid (each CTA's two math warpgroups take 18-19 tiles in turn): two runs
    write the same bits, and the result is the cooperative kernel's within the bound of test_bf16 / the block test."""
    m, n, k = 1000, 2048, 2048
    seed, x, w = _inputs(m, n, k)
    outs = []
    for cfg in (config, config, {"block_m": 128, "block_n": 128, "pingpong": 0}):
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        if recipe == "none":
            gemmgen.bf16_gemm_nt(x, w, out, config=cfg)
        else:
            a, b = gemmgen.per_token_cast_to_fp8(x.float()), gemmgen.per_block_cast_to_fp8(w.float())
            gemmgen.fp8_gemm_nt(a, b, out, config=cfg)
        torch.cuda.synchronize()
        outs.append(out)
    assert not outs[0].isnan().any(), f"seed {seed}: outputs unwritten"
    assert torch.equal(outs[0].view(torch.int16), outs[1].view(torch.int16)), f"seed {seed}: runs differ"
    ref = outs[2].double()
    bound = 2**-8 * ref.abs() + 2**-11 * ref.abs().max()
    assert ((outs[0].double() - ref).abs() <= 2 * bound).all(), f"seed {seed}: ping-pong differs from cooperative"
