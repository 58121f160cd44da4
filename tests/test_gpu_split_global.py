"""GPU tier: K splits meeting in a global workspace (GemmConfig.split_global=1).

Each split is its own CTA; it writes its partial tile to the workspace and counts itself in on the tile's counter,
and the last to arrive adds the partials in split order and stores D. So: the same bits as the cluster hand-over
(split_global=0, the same split order); every counter back at zero after each launch (the last arrival resets it,
no memset per call: one kernel per eager call); correct on every call of a run (a counter left behind would make a
later launch store a tile early, from missing partials); and the workspace contract (runtime/workspace.py) under
every interleaving of eager calls and graph replays: an eager call on a capture stream before the first replay,
replays on another stream while eager calls run on the capture stream, two graphs captured on torch's default capture
stream replayed at once on two streams, graphs sharing one pool replayed in any order. Each through the fast path
(the default kernel of 8 x 2112 x 7168 splits K in a workspace) and the general one (a pinned config). Outputs are
poisoned first; numerics against float64 as in test_gpu_gemm."""

from __future__ import annotations

import re

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


def _counters_zero(m: int, n: int, k: int, config: dict[str, int] | None) -> bool:
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config)
    held = kern.launcher.workspaces.eager()
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


# (M, N, K, config): the fast path's default kernel (A and B swapped, 4 splits in a workspace) and a pinned one
PATHS = [(8, 2112, 7168, None), (200, 1024, 2048, UNSWAPPED)]
PATH_IDS = ["fast-path-default", "pinned"]


def _warm(m: int, n: int, k: int, config) -> tuple:
    """Operands, and the kernel loaded (outside any capture) by one checked call on the current stream."""
    a, b = _operands(m, n, k)
    name = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config).name
    assert re.search(r"_ks\d+g_", name), f"{name}: not a kernel whose K splits meet in a workspace"
    assert _close(_call(a, b, m, n, config), a, b)
    torch.cuda.synchronize()
    return a, b


def _refill(a) -> None:
    fresh, _ = _operands(a[0].shape[0], 128, a[0].shape[1])
    a[0].copy_(fresh[0])
    a[1].copy_(fresh[1])


@pytest.mark.parametrize("m,n,k,config", PATHS, ids=PATH_IDS)
def test_eager_call_on_the_capture_stream_before_the_first_replay(m, n, k, config) -> None:
    """Warmed on the default stream; the capture on a new stream makes that call's workspace in the graph's pool;
    an eager call on the capture stream before any replay must not read that workspace's unzeroed counters."""
    a, b = _warm(m, n, k, config)
    side = torch.cuda.Stream()
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        gemmgen.fp8_gemm_nt(a, b, out, config=config)
        gemmgen.fp8_gemm_nt(a, b, out, config=config)  # twice: the first launch must leave its counters at zero
    for i in range(3):
        with torch.cuda.stream(side):
            eager = _call(a, b, m, n, config)
        torch.cuda.synchronize()
        assert _close(eager, a, b), f"eager call {i} on the capture stream"
        _refill(a)
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert _close(out, a, b), f"replay {i}"
    assert _counters_zero(m, n, k, config)


@pytest.mark.parametrize("m,n,k,config", PATHS, ids=PATH_IDS)
def test_replays_on_another_stream_while_eager_calls_run_on_the_capture_stream(m, n, k, config) -> None:
    a, b = _warm(m, n, k, config)
    capture, other = torch.cuda.Stream(), torch.cuda.Stream()
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture):
        gemmgen.fp8_gemm_nt(a, b, out, config=config)
    inputs = [_operands(m, n, k) for _ in range(8)]
    eager = [torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in inputs]
    replayed = []
    torch.cuda.synchronize()
    for _round in range(4):
        for (ea, eb), eo in zip(inputs, eager, strict=True):
            with torch.cuda.stream(other):
                graph.replay()
                replayed.append(out.clone())  # on the replay's stream: after it
            with torch.cuda.stream(capture):
                gemmgen.fp8_gemm_nt(ea, eb, eo, config=config)
    torch.cuda.synchronize()
    assert all(_close(eo, ea, eb) for (ea, eb), eo in zip(inputs, eager, strict=True)), "an eager call"
    assert all(_close(r, a, b) for r in replayed), "a replay"


@pytest.mark.parametrize("m,n,k,config", PATHS, ids=PATH_IDS)
def test_two_graphs_of_the_default_capture_stream_replayed_at_once(m, n, k, config) -> None:
    """Two graphs captured on torch's default capture stream (the same stream for both) hold one workspace each."""
    (a1, b1), (a2, b2) = _warm(m, n, k, config), _operands(m, n, k)
    outs = [torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    graphs = [torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()]
    for graph, (a, b), out in zip(graphs, ((a1, b1), (a2, b2)), outs, strict=True):
        with torch.cuda.graph(graph):
            gemmgen.fp8_gemm_nt(a, b, out, config=config)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    copies: list[list[torch.Tensor]] = [[], []]
    torch.cuda.synchronize()
    for _ in range(16):
        for i in range(2):
            with torch.cuda.stream(streams[i]):
                graphs[i].replay()
                copies[i].append(outs[i].clone())
    torch.cuda.synchronize()
    assert all(_close(c, a1, b1) for c in copies[0]) and all(_close(c, a2, b2) for c in copies[1])


def test_eager_calls_launch_one_kernel_and_no_memset() -> None:
    m, n, k = 8, 2112, 7168
    a, b = _warm(m, n, k, None)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            gemmgen.fp8_gemm_nt(a, b, out)
        torch.cuda.synchronize()
    name = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0)).name
    device_events = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert device_events == [name] * 3, device_events


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
    """Two graphs captured on one stream into one memory pool, after a third that wrote 7s into a block of the
    workspace's size and freed it: each captured call's workspace comes from that pool and its counters are zeroed
    by the graph itself, so the second graph, replayed first, still starts from zero counters."""
    m, n, k = 8, 2112, 7168
    a, b = _warm(m, n, k, SWAPPED)
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), SWAPPED)
    floats, counters = kern.launcher.plan.launch.workspace_floats(m, 1)
    pool = torch.cuda.graph_pool_handle()
    dirty, first, second = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    with torch.cuda.graph(dirty, pool=pool, stream=side):
        junk = torch.empty(-(-floats // 4) * 4 + counters, device="cuda")  # the workspace's size, then freed
        junk.view(torch.int32).fill_(7)
        del junk
    outs = [torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    with torch.cuda.graph(first, pool=pool, stream=side):
        gemmgen.fp8_gemm_nt(a, b, outs[0], config=SWAPPED)
    with torch.cuda.graph(second, pool=pool, stream=side):
        gemmgen.fp8_gemm_nt(a, b, outs[1], config=SWAPPED)
    dirty.replay()
    second.replay()
    torch.cuda.synchronize()
    assert _close(outs[1], a, b)
    dirty.replay()
    first.replay()
    torch.cuda.synchronize()
    assert _close(outs[0], a, b)
