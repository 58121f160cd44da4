"""Fitting into torch, on the CPU: the custom ops and their fake implementations, set_num_sms, the compat module,
and a CLI that never imports torch."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import gemmgen
import gemmgen.api as api
import gemmgen.compat as deep_gemm
import gemmgen.ops  # noqa: F401 - registers torch.ops.gemmgen.*

E4M3 = torch.float8_e4m3fn


def _dense(device: str = "meta"):
    return (torch.empty(64, 256, dtype=E4M3, device=device), torch.empty(64, 2, device=device),
            torch.empty(128, 256, dtype=E4M3, device=device), torch.empty(1, 2, device=device),
            torch.empty(64, 128, dtype=torch.bfloat16, device=device))


OPS = ("fp8_gemm_nt", "bf16_gemm_nt", "fp8_gemm_nt_wgrad", "m_grouped_fp8_gemm_nt_contiguous",
       "m_grouped_bf16_gemm_nt_contiguous", "m_grouped_fp8_gemm_nt_masked", "m_grouped_bf16_gemm_nt_masked")


def test_ops_are_registered_with_their_schemas() -> None:
    schemas = {name: str(getattr(torch.ops.gemmgen, name).default._schema) for name in OPS}
    assert all(s.endswith("-> ()") for s in schemas.values()), schemas
    assert "Tensor(a4!) out" in schemas["fp8_gemm_nt"]
    assert "str? recipe=None, bool accumulate=False)" in schemas["fp8_gemm_nt"]
    assert "Tensor m_indices" in schemas["m_grouped_fp8_gemm_nt_contiguous"]
    assert "SymInt expected_m" in schemas["m_grouped_fp8_gemm_nt_masked"] or \
        "int expected_m" in schemas["m_grouped_fp8_gemm_nt_masked"]
    assert "(Tensor a, Tensor b, Tensor(a2!) out, Tensor masked_m, " in schemas["m_grouped_bf16_gemm_nt_masked"]
    assert "(Tensor a, Tensor b, Tensor(a2!) out, bool accumulate=False)" in schemas["bf16_gemm_nt"]
    assert "Tensor(a4!) out, bool accumulate)" in schemas["fp8_gemm_nt_wgrad"]  # no default: the call's is True
    assert "(Tensor a, Tensor b, Tensor(a2!) out, Tensor m_indices)" in schemas["m_grouped_bf16_gemm_nt_contiguous"]


def _new_ops_args(device: str) -> dict[str, tuple]:
    """bf16 dense, FP8 wgrad (fp32 out) and bf16 contiguous operands of valid shapes."""
    bf = torch.bfloat16
    return {
        "bf16_gemm_nt": (torch.empty(64, 256, dtype=bf, device=device), torch.empty(128, 256, dtype=bf, device=device),
                         torch.empty(64, 128, dtype=bf, device=device)),
        "fp8_gemm_nt_wgrad": (torch.empty(64, 256, dtype=E4M3, device=device), torch.empty(64, 2, device=device),
                              torch.empty(128, 256, dtype=E4M3, device=device), torch.empty(128, 2, device=device),
                              torch.empty(64, 128, device=device), True),
        "m_grouped_bf16_gemm_nt_contiguous": (
            torch.empty(256, 256, dtype=bf, device=device), torch.empty(3, 128, 256, dtype=bf, device=device),
            torch.empty(256, 128, dtype=bf, device=device), torch.empty(256, dtype=torch.int32, device=device)),
    }


def test_fake_implementations_trace_without_a_gpu() -> None:
    assert torch.ops.gemmgen.fp8_gemm_nt(*_dense()) is None  # the meta/fake kernel
    with FakeTensorMode():
        a, sa, b, sb, out = _dense("cpu")
        assert torch.ops.gemmgen.fp8_gemm_nt(a, sa, b, sb, out) is None
        g = torch.empty(3, 128, 256, dtype=E4M3)
        assert torch.ops.gemmgen.m_grouped_fp8_gemm_nt_masked(
            torch.empty(3, 64, 256, dtype=E4M3), torch.empty(3, 64, 2), g, torch.empty(3, 1, 2),
            torch.empty(3, 64, 128, dtype=torch.bfloat16), torch.empty(3, dtype=torch.int32), 32) is None


def test_new_ops_fake_implementations_trace_without_a_gpu() -> None:
    """The bf16, wgrad and bf16 contiguous ops (and fp8_gemm_nt's recipe/accumulate arguments) run their fake
    implementations on meta and fake tensors, and make_fx traces a function calling them into a graph holding each
    op once, with `out` mutated in place (no copy of a result)."""
    for name, args in _new_ops_args("meta").items():
        assert getattr(torch.ops.gemmgen, name)(*args) is None, name
    assert torch.ops.gemmgen.fp8_gemm_nt(*_dense(), "block", False) is None
    with FakeTensorMode():
        for name, args in _new_ops_args("cpu").items():
            assert getattr(torch.ops.gemmgen, name)(*args) is None, name

    def model(*args: torch.Tensor) -> torch.Tensor:
        torch.ops.gemmgen.bf16_gemm_nt(*args[:3])
        torch.ops.gemmgen.fp8_gemm_nt_wgrad(*args[3:8], True)
        torch.ops.gemmgen.m_grouped_bf16_gemm_nt_contiguous(*args[8:12])
        torch.ops.gemmgen.fp8_gemm_nt(*args[12:], recipe="block", accumulate=False)
        return args[2].float().sum() + args[7].sum()  # reads two outs after the ops wrote them

    flat = [x for args in _new_ops_args("cpu").values() for x in args if isinstance(x, torch.Tensor)]
    graph = make_fx(model, tracing_mode="fake")(*flat, *_dense("cpu"))
    targets = [str(node.target) for node in graph.graph.nodes if node.op == "call_function"]
    for name in ("bf16_gemm_nt", "fp8_gemm_nt_wgrad", "m_grouped_bf16_gemm_nt_contiguous", "fp8_gemm_nt"):
        assert targets.count(f"gemmgen.{name}.default") == 1, targets


def test_set_num_sms_reaches_the_config() -> None:
    assert api._overrides(None) is None
    with gemmgen.num_sms(66):
        assert api._overrides(None) == {"num_sms": 66} and gemmgen.get_num_sms() == 66
        assert api._overrides({"num_sms": 33, "stages": 4}) == {"num_sms": 33, "stages": 4}  # the call's own wins
        with gemmgen.num_sms(None):
            assert api._overrides(None) is None
        assert api._overrides({"block_n": 64}) == {"block_n": 64, "num_sms": 66}
    assert api._overrides(None) is None
    for bad in (0, -1, 1.5, True, "8"):
        with pytest.raises(ValueError, match="num_sms: expected a positive integer"):
            gemmgen.set_num_sms(bad)  # type: ignore[arg-type]


def test_compat_names() -> None:
    for name in ("gemm_fp8_fp8_bf16_nt", "m_grouped_gemm_fp8_fp8_bf16_nt_contiguous",
                 "m_grouped_gemm_fp8_fp8_bf16_nt_masked", "get_col_major_tma_aligned_tensor",
                 "get_m_alignment_for_contiguous_layout", "set_num_sms", "get_num_sms", "calc_diff",
                 "wgrad_gemm_fp8_fp8_fp32_nt", "k_grouped_wgrad_gemm_fp8_fp8_fp32_nt"):
        assert callable(getattr(deep_gemm, name)), name
    assert deep_gemm.get_m_alignment_for_contiguous_layout() == 128
    x = torch.randn(5, 3)
    aligned = deep_gemm.get_col_major_tma_aligned_tensor(x)
    assert torch.equal(aligned, x) and aligned.stride() == (1, 8)
    with pytest.raises(ValueError, match="a: K must be a positive multiple of 16"):  # gemmgen's own checks
        deep_gemm.gemm_fp8_fp8_bf16_nt((torch.zeros(4, 24).to(E4M3), torch.ones(4, 1)),
                                       (torch.zeros(16, 24).to(E4M3), torch.ones(1, 1)),
                                       torch.empty(4, 16, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="out: expected a float32 tensor"):  # the wgrad call writes fp32
        deep_gemm.wgrad_gemm_fp8_fp8_fp32_nt((torch.zeros(4, 128).to(E4M3), torch.ones(4, 1)),
                                             (torch.zeros(16, 128).to(E4M3), torch.ones(16, 1)),
                                             torch.empty(4, 16, dtype=torch.bfloat16))


def test_cli_never_imports_torch(tmp_path) -> None:
    """`gemmgen build` (and inspect/cache/precompile) import no torch: a cached build stays well under a second."""
    script = ("import sys\nfrom gemmgen.cli import main\n"
              f"main(['build', '--shape', '64x256x512', '--out', {str(tmp_path / 'g')!r}], standalone_mode=False)\n"
              f"main(['inspect', {str(tmp_path / 'g')!r} + '/' + __import__('os').listdir({str(tmp_path / 'g')!r})[0]],"
              " standalone_mode=False)\n"
              "main(['cache', 'list'], standalone_mode=False)\n"
              "assert 'torch' not in sys.modules, 'the CLI imported torch'\n")
    env = {**__import__("os").environ, "GEMMGEN_CACHE_DIR": str(tmp_path / "cache")}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "kernel   sm90_" in res.stdout


def test_importing_gemmgen_after_torch_registers_the_ops_and_without_torch_names_it() -> None:
    """In a fresh interpreter: `import torch, gemmgen` registers torch.ops.gemmgen.* with no call made; with torch
    missing, the CLI and gemmgen.build still import, and a torch-needing name says what to install."""
    import subprocess
    import sys

    code = "import torch, gemmgen; print(torch.ops.gemmgen.fp8_gemm_nt)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "gemmgen.fp8_gemm_nt" in done.stdout, done.stderr
    code = ("import sys; sys.modules['torch'] = None; import gemmgen, gemmgen.cli; gemmgen.build\n"
            "try:\n    gemmgen.fp8_gemm_nt\nexcept ImportError as e:\n    print(e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "needs torch, which is not installed: pip install torch" in done.stdout, done.stderr


def test_compat_k_grouped_wgrad_checks_its_layout() -> None:
    """DeepGEMM's k-grouped layout (flattened [M, k_g] chunks, scales [sum k_g/128, M]): wrong sizes are named before
    any kernel is looked for."""
    m, n, ks = 128, 64, [256, 128]
    a, sa = torch.zeros(m * 384).to(E4M3), torch.ones(3, m)
    b, sb = torch.zeros(n * 384).to(E4M3), torch.ones(3, n)
    out = torch.zeros(2, m, n)
    call = deep_gemm.k_grouped_wgrad_gemm_fp8_fp8_fp32_nt
    with pytest.raises(ValueError, match=r"batch_sizes: expected 2 non-negative ints"):
        call((a, sa), (b, sb), out, [384])
    with pytest.raises(ValueError, match=r"batch_sizes: expected 2 non-negative ints"):
        call((a, sa), (b, sb), out, [256, -128])
    with pytest.raises(ValueError, match=r"lhs: expected 128 x sum\(batch_sizes\) = 49152 elements"):
        call((a[:-16], sa), (b, sb), out, ks)
    with pytest.raises(ValueError, match=r"rhs\[1\]: expected scales \[sum ceil\(k_g/128\), N\] = \[3, 64\]"):
        call((a, sa), (b, sb.t()), out, ks)
    with pytest.raises(ValueError, match=r"out: expected a \[G, M, N\] float32 tensor, got shape \[128, 64\]"):
        call((a, sa), (b, sb), out[0], ks)
    call((a[:0], sa[:0]), (b[:0], sb[:0]), out, [0, 0])  # every group empty: nothing to add, nothing launched
