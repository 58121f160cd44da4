"""GPU tier: the torch ops (opcheck, torch.compile fullgraph), CUDA-graph capture of a first call, set_num_sms,
non-finite inputs through the GEMM, and two GPUs (a torchrun of examples/two_gpus.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import gemmgen
import gemmgen.ops  # noqa: F401 - registers torch.ops.gemmgen.*
from gemmgen.errors import GemmgenError
from gemmgen.quant import dequantize_a, dequantize_b

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _cache(settings, monkeypatch) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))


def _operands(m: int, n: int, k: int):
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    return a, sa, b, sb


def _ref(a, sa, b, sb) -> torch.Tensor:
    return dequantize_a(a, sa) @ dequantize_b(b, sb).t()


def _close(out: torch.Tensor, ref: torch.Tensor) -> bool:
    return bool(((out.double() - ref).abs() <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all())


# opcheck's test_schema perturbs inputs with arithmetic that float8 tensors do not support on CUDA ("mul_cuda" not
# implemented for Float8_e4m3fn, seen on the H200): the schema's mutation claim is checked by _only_out_changes.
OPCHECK_UTILS = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _only_out_changes(op, args: tuple, out_index: int) -> None:
    """The op writes its declared `out` and no other argument (the schema's claim), bit for bit."""
    before = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
    op(*args)
    torch.cuda.synchronize()
    for i, (old, new) in enumerate(zip(before, args, strict=True)):
        if isinstance(old, torch.Tensor) and i != out_index:
            assert torch.equal(old.contiguous().view(torch.uint8), new.contiguous().view(torch.uint8)), i
    assert not torch.equal(before[out_index], args[out_index]), "out was not written"


def test_opcheck_dense_and_grouped() -> None:
    a, sa, b, sb = _operands(192, 512, 1024)
    out = torch.zeros(192, 512, device="cuda", dtype=torch.bfloat16)
    _only_out_changes(torch.ops.gemmgen.fp8_gemm_nt.default, (a, sa, b, sb, out), 4)
    torch.library.opcheck(torch.ops.gemmgen.fp8_gemm_nt.default, (a, sa, b, sb, out), test_utils=OPCHECK_UTILS)
    g = gemmgen.contiguous_layout([100, 0, 130], device="cuda")
    ga, gsa = gemmgen.per_token_cast_to_fp8(torch.randn(g.m_total, 1024, device="cuda"))
    gb, gsb = gemmgen.per_block_cast_to_fp8(torch.randn(3, 512, 1024, device="cuda"))
    gout = torch.zeros(g.m_total, 512, device="cuda", dtype=torch.bfloat16)
    contiguous = (ga, gsa, gb, gsb, gout, g.m_indices)
    _only_out_changes(torch.ops.gemmgen.m_grouped_fp8_gemm_nt_contiguous.default, contiguous, 4)
    torch.library.opcheck(torch.ops.gemmgen.m_grouped_fp8_gemm_nt_contiguous.default, contiguous,
                          test_utils=OPCHECK_UTILS)
    ma, msa = gemmgen.per_token_cast_to_fp8(torch.randn(3, 128, 1024, device="cuda"))
    mout = torch.zeros(3, 128, 512, device="cuda", dtype=torch.bfloat16)
    masked_m = torch.tensor([5, 0, 128], dtype=torch.int32, device="cuda")
    masked = (ma, msa, gb, gsb, mout, masked_m, 64)
    _only_out_changes(torch.ops.gemmgen.m_grouped_fp8_gemm_nt_masked.default, masked, 4)
    torch.library.opcheck(torch.ops.gemmgen.m_grouped_fp8_gemm_nt_masked.default, masked, test_utils=OPCHECK_UTILS)


def test_opcheck_bf16_wgrad_and_bf16_contiguous() -> None:
    """The ops added with the bf16 and wgrad calls (and fp8_gemm_nt's recipe/accumulate arguments, fp32 out): each
    writes only `out` and passes opcheck; the bf16 ops match their Python calls bit for bit."""
    x, w = torch.randn(192, 512, device="cuda", dtype=torch.bfloat16), torch.randn(256, 512, device="cuda",
                                                                                   dtype=torch.bfloat16)
    bf16 = (x, w, torch.zeros(192, 256, device="cuda", dtype=torch.bfloat16))
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(192, 512, device="cuda"))
    b, sb = gemmgen.per_token_cast_to_fp8(torch.randn(256, 512, device="cuda"))
    wgrad = (a, sa, b, sb, torch.zeros(192, 256, device="cuda"), False)  # opcheck runs it repeatedly: overwrite
    g = gemmgen.contiguous_layout([100, 0, 130], device="cuda")
    ga = torch.randn(g.m_total, 512, device="cuda", dtype=torch.bfloat16)
    gw = torch.randn(3, 256, 512, device="cuda", dtype=torch.bfloat16)
    contiguous = (ga, gw, torch.zeros(g.m_total, 256, device="cuda", dtype=torch.bfloat16), g.m_indices)
    da, dsa, db, dsb = _operands(192, 512, 1024)
    fp32 = (da, dsa, db, dsb, torch.zeros(192, 512, device="cuda"), "block", False)
    for op, args, out_index in ((torch.ops.gemmgen.bf16_gemm_nt.default, bf16, 2),
                                (torch.ops.gemmgen.fp8_gemm_nt_wgrad.default, wgrad, 4),
                                (torch.ops.gemmgen.m_grouped_bf16_gemm_nt_contiguous.default, contiguous, 2),
                                (torch.ops.gemmgen.fp8_gemm_nt.default, fp32, 4)):
        _only_out_changes(op, args, out_index)
        torch.library.opcheck(op, args, test_utils=OPCHECK_UTILS)
    expect = torch.zeros_like(bf16[2])
    gemmgen.bf16_gemm_nt(x, w, expect)
    got = torch.zeros_like(bf16[2])
    torch.ops.gemmgen.bf16_gemm_nt(x, w, got)
    assert torch.equal(got, expect)
    expect = torch.zeros_like(contiguous[2])
    gemmgen.m_grouped_bf16_gemm_nt_contiguous(ga, gw, expect, g.m_indices)
    got = torch.zeros_like(contiguous[2])
    torch.ops.gemmgen.m_grouped_bf16_gemm_nt_contiguous(ga, gw, got, g.m_indices)
    assert torch.equal(got, expect)


def test_torch_compile_fullgraph() -> None:
    a, sa, b, sb = _operands(256, 1024, 2048)

    def layer(a, sa, b, sb):
        out = torch.empty(a.shape[0], b.shape[0], device=a.device, dtype=torch.bfloat16)
        torch.ops.gemmgen.fp8_gemm_nt(a, sa, b, sb, out)
        return out.float().relu() * 2

    compiled = torch.compile(layer, fullgraph=True)
    got = compiled(a, sa, b, sb)
    assert torch.equal(got, layer(a, sa, b, sb))
    assert _close((got / 2).to(torch.bfloat16), _ref(a, sa, b, sb).clamp(min=0))


def test_first_call_inside_a_graph_capture_asks_for_a_warm_up() -> None:
    a, sa, b, sb = _operands(64, 1160, 512)  # a shape no other test loads
    out = torch.empty(64, 1160, device="cuda", dtype=torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(GemmgenError, match="call it once before capturing"):
        with torch.cuda.graph(graph):
            gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)  # the warm-up
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert _close(out, _ref(a, sa, b, sb))


def test_set_num_sms_caps_the_grid() -> None:
    a, sa, b, sb = _operands(512, 2048, 1024)
    out = torch.full((512, 2048), float("nan"), device="cuda", dtype=torch.bfloat16)
    with gemmgen.num_sms(66):
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
        kernel = gemmgen.get_kernel(512, 2048, 1024, gemmgen.api.device_target(0), {"num_sms": 66})
    torch.cuda.synchronize()
    assert kernel.config.num_sms == 66 and kernel.name.endswith("_g66")
    assert kernel.launcher.plan.launch.grid(512, 1) <= 66
    assert _close(out, _ref(a, sa, b, sb))
    assert gemmgen.get_num_sms() == torch.cuda.get_device_properties(0).multi_processor_count


def test_non_finite_inputs_poison_exactly_their_outputs() -> None:
    x, w = torch.randn(256, 512, device="cuda"), torch.randn(384, 512, device="cuda")
    x[7, 300] = float("inf")  # A row 7, K block 2
    w[200, 10] = float("nan")  # B rows 128..255, K block 0
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    out = torch.empty(256, 384, device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    torch.cuda.synchronize()
    expected = torch.zeros(256, 384, dtype=torch.bool, device="cuda")
    expected[7, :] = True
    expected[:, 128:256] = True
    assert torch.equal(out.isnan(), expected)


def test_two_gpus_share_one_cache(tmp_path: Path) -> None:
    """torchrun of examples/two_gpus.py: rank r on cuda:r, one shared cache folder (one compile), NCCL exchange,
    each rank's result against float64. Skipped, saying so, where fewer than two GPUs exist."""
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, this machine has {torch.cuda.device_count()}: the 2-GPU run was not made here")
    env = {**os.environ, "GEMMGEN_CACHE_DIR": str(tmp_path / "shared-cache"), "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                          str(ROOT / "examples" / "two_gpus.py")], capture_output=True, text=True, env=env,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads(next(line for line in res.stdout.splitlines() if line.startswith("{")))
    assert report["ok"] and report["world"] == 2 and report["exchange_ok"]
    assert sorted(report["from_cache_per_rank"]) == [False, True], "both ranks compiled: the cache lock failed"
    print(json.dumps(report))
