"""GPU tier: K splits meeting in a global workspace (GemmConfig.split_global=1).

Each split is its own CTA; it writes its partial tile to the workspace and counts itself in on the tile's counter,
and the last to arrive adds the partials in split order and stores D. So: the same bits as the cluster hand-over
(split_global=0, the same split order); every counter back at zero after each launch (the last arrival resets it,
no memset per call); correct on every call of a run (a counter left behind would make a later launch store a tile
early, from missing partials); inside a CUDA graph whose capture allocated the workspace; and on two streams at once
(one workspace per stream). Outputs are poisoned first; numerics against float64 as in test_gpu_gemm."""

from __future__ import annotations

import pytest
import torch

import gemmgen
from gemmgen.quant import dequantize_a, dequantize_b

pytestmark = pytest.mark.gpu

SWAPPED = {"swap_ab": 1, "k_splits": 4, "split_global": 1}  # 33 weight tiles x 4 splits on 132 CTAs
UNSWAPPED = {"block_m": 128, "block_n": 64, "k_splits": 2, "split_global": 1}  # several M blocks


@pytest.fixture(autouse=True)
def cache(settings, monkeypatch):
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))


def _operands(m: int, n: int, k: int):
    a = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    return a, b


def _close(out: torch.Tensor, a, b) -> bool:
    ref = dequantize_a(*a) @ dequantize_b(*b).t()
    err = (out.double() - ref).abs()
    return bool(not out.isnan().any() and (err <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all())


def _call(a, b, m: int, n: int, config: dict[str, int]) -> torch.Tensor:
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt(a, b, out, config=config)
    return out


def _counters_zero(m: int, n: int, k: int, config: dict[str, int]) -> bool:
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config)
    held = kern.launcher.workspaces._buffers
    assert held, "no workspace was made"
    return all(int(w.views["ws_counters"].abs().sum()) == 0 for w in held.values())


@pytest.mark.parametrize("shape,config", [((8, 2112, 7168), SWAPPED), ((200, 1024, 2048), UNSWAPPED),
                                          ((9, 1000, 7296), {"block_n": 112, "k_splits": 3, "split_global": 1})])
def test_same_bits_as_the_cluster_hand_over_and_counters_reset(shape, config) -> None:
    m, n, k = shape
    a, b = _operands(m, n, k)
    glob = _call(a, b, m, n, config)
    cluster = _call(a, b, m, n, {**config, "split_global": 0})
    torch.cuda.synchronize()
    assert "_ks" in gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config).name
    assert _close(glob, a, b)
    assert torch.equal(glob, cluster), f"{int((glob != cluster).sum())} elements differ from the DSMEM hand-over"
    assert _counters_zero(m, n, k, config)


def test_every_call_of_a_run_and_a_larger_m() -> None:
    """Ten calls with fresh inputs (each checked), then a larger M on the same kernel (the workspace grows)."""
    n, k = 1024, 2048
    for i in range(10):
        m = 200 if i < 9 else 520
        a, b = _operands(m, n, k)
        out = _call(a, b, m, n, UNSWAPPED)
        torch.cuda.synchronize()
        assert _close(out, a, b), f"call {i} (M = {m})"
    assert _counters_zero(520, n, k, UNSWAPPED)


def test_cuda_graph_capture_allocates_and_replays() -> None:
    """Warmed on the default stream only: the capture stream's workspace is made (and zeroed) inside the capture."""
    m, n, k = 8, 2112, 7168
    a, b = _operands(m, n, k)
    _call(a, b, m, n, SWAPPED)  # loads the kernel outside the capture
    torch.cuda.synchronize()
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemmgen.fp8_gemm_nt(a, b, out, config=SWAPPED)
        gemmgen.fp8_gemm_nt(a, b, out, config=SWAPPED)  # twice: the first launch must leave its counters at zero
    for _ in range(3):
        fresh, _unused = _operands(m, n, k)
        a[0].copy_(fresh[0])
        a[1].copy_(fresh[1])
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert _close(out, a, b)


def test_two_streams_at_once() -> None:
    m, n, k = 8, 2112, 7168
    (a1, b1), (a2, b2) = _operands(m, n, k), _operands(m, n, k)
    ref1, ref2 = _call(a1, b1, m, n, SWAPPED), _call(a2, b2, m, n, SWAPPED)
    torch.cuda.synchronize()
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    outs = [torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    for _ in range(20):
        with torch.cuda.stream(s1):
            gemmgen.fp8_gemm_nt(a1, b1, outs[0], config=SWAPPED)
        with torch.cuda.stream(s2):
            gemmgen.fp8_gemm_nt(a2, b2, outs[1], config=SWAPPED)
    torch.cuda.synchronize()
    assert torch.equal(outs[0], ref1) and torch.equal(outs[1], ref2)
    assert _counters_zero(m, n, k, SWAPPED)


def test_graphs_sharing_a_pool_replay_in_any_order() -> None:
    """Two graphs captured on one stream into one memory pool: the workspace is made in the first capture, from a
    block an earlier graph of that pool wrote 7s into; the second graph, replayed first, must still start from zero
    counters (each captured call zeroes a capture-made workspace's counters; without that its tiles never stored)."""
    m, n, k = 8, 2112, 7168
    a, b = _operands(m, n, k)
    _call(a, b, m, n, SWAPPED)  # loads the kernel outside the captures
    torch.cuda.synchronize()
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), SWAPPED)
    floats, counters = kern.launcher.plan.launch.workspace_floats(m, 1)
    pool = torch.cuda.graph_pool_handle()
    dirty, first, second = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()  # a stream no call has used yet: its workspace is made inside the first capture
    with torch.cuda.graph(dirty, pool=pool, stream=side):
        junk = torch.empty(-(-floats // 4) * 4 + counters, device="cuda")  # the workspace's size, then freed
        junk.view(torch.int32).fill_(7)
        junk_at = junk.data_ptr()
        del junk
    outs = [torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    with torch.cuda.graph(first, pool=pool, stream=side):
        gemmgen.fp8_gemm_nt(a, b, outs[0], config=SWAPPED)
    with torch.cuda.graph(second, pool=pool, stream=side):
        gemmgen.fp8_gemm_nt(a, b, outs[1], config=SWAPPED)
    made = [w for (_d, s), w in kern.launcher.workspaces._buffers.items() if s == side.cuda_stream]
    assert made and made[0].captured and made[0].views["ws_partials"].data_ptr() == junk_at, "not the dirty block"
    dirty.replay()
    second.replay()
    torch.cuda.synchronize()
    assert _close(outs[1], a, b)
    first.replay()
    torch.cuda.synchronize()
    assert _close(outs[0], a, b)
