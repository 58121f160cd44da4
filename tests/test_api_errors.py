"""Bad input to the public API, checked on the CPU: clear errors naming the argument; a compile error carries
the log and the .cu path; launching without a GPU says so."""

from __future__ import annotations

import pytest
import torch

import gemmgen
from gemmgen import stages as build_mod
from gemmgen.errors import CompileError, NoGpuError
from gemmgen.ir import GemmProblem
from gemmgen.runtime.driver import gpu_available

E4M3 = torch.float8_e4m3fn


def _operands(m: int = 4, n: int = 16, k: int = 32):
    a = torch.zeros(m, k).to(E4M3)
    b = torch.zeros(n, k).to(E4M3)
    sa = torch.ones(m, -(-k // 128))
    sb = torch.ones(-(-n // 128), -(-k // 128))
    out = torch.empty(m, n, dtype=torch.bfloat16)
    return a, sa, b, sb, out


@pytest.mark.parametrize("mutate,exc,words", [
    (lambda o: (o[0].float(), *o[1:]), TypeError, ["a:", "float8_e4m3fn", "float32"]),
    (lambda o: (o[0], o[1], o[2].to(torch.bfloat16), *o[3:]), TypeError, ["b:", "float8_e4m3fn"]),
    (lambda o: (*o[:4], o[4].half()), TypeError, ["out:", "bfloat16, float32 or float8_e4m3fn"]),
    (lambda o: (o[0], torch.ones(4, 2), *o[2:]), ValueError, ["sa:", "(4, 1)", "(4, 2)"]),
    (lambda o: (*o[:3], torch.ones(2, 1), o[4]), ValueError, ["sb:", "(1, 1)", "(2, 1)"]),
    (lambda o: (*o[:4], torch.empty(4, 8, dtype=torch.bfloat16)), ValueError, ["out:", "(4, 16)", "(4, 8)"]),
    (lambda o: (o[0], o[1], torch.zeros(16, 48).to(E4M3), *o[3:]), ValueError, ["b:", "K=32"]),
    (lambda o: (o[0][:, :24].contiguous(), torch.ones(4, 1), torch.zeros(16, 24).to(E4M3), *o[3:]), ValueError,
     ["a:", "multiple of 16", "K=24"]),
    (lambda o: (o[0][0], *o[1:]), ValueError, ["a:", "2-D"]),
])
def test_bad_arguments_are_named(mutate, exc, words) -> None:
    a, sa, b, sb, out = mutate(_operands())
    with pytest.raises(exc) as info:
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


def test_operands_must_be_pairs() -> None:
    a, sa, b, sb, out = _operands()
    with pytest.raises(TypeError, match="a: expected a"):
        gemmgen.fp8_gemm_nt(a, (b, sb), out)  # type: ignore[arg-type]


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_launch_without_gpu_is_a_clear_error() -> None:
    a, sa, b, sb, out = _operands()
    with pytest.raises(NoGpuError, match="no CUDA GPU"):
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)


def test_compile_error_carries_log_and_source(settings, monkeypatch) -> None:
    monkeypatch.setattr(build_mod, "render", lambda kernel, version, bytecode_dir=None: "this is not C++;\n")
    with pytest.raises(CompileError) as info:
        build_mod.build(GemmProblem(64, 128, 256), settings=settings)
    err = info.value
    assert err.source_path.is_file() and err.source_path.read_text() == "this is not C++;\n"
    assert "error" in err.log.lower()
    assert str(err.source_path) in str(err) and "gemmgen nvrtc" in str(err)


def test_m_zero_returns_at_once_without_a_gpu() -> None:
    """M = 0 launches nothing, so it needs no GPU (README): the same on a CPU-only machine and on a GPU one."""
    a, sa, b, sb, out = _operands(m=0)
    assert gemmgen.fp8_gemm_nt((a, sa), (b, sb), out) is out
    contiguous_out = torch.empty(0, 16, dtype=torch.bfloat16)
    assert gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b.unsqueeze(0), sb.unsqueeze(0)), contiguous_out,
                                                    torch.empty(0, dtype=torch.int32)) is contiguous_out
    masked_out = torch.empty(2, 0, 16, dtype=torch.bfloat16)
    assert gemmgen.m_grouped_fp8_gemm_nt_masked((a.unsqueeze(0).expand(2, 0, 32), sa.unsqueeze(0).expand(2, 0, 1)),
                                                (b.expand(2, 16, 32), sb.expand(2, 1, 1)), masked_out,
                                                torch.zeros(2, dtype=torch.int32), 8) is masked_out


def test_unknown_config_field_is_rejected_by_the_api(settings) -> None:
    with pytest.raises(ValueError, match="config: unknown field 'foo'"):
        build_mod.build(GemmProblem(64, 128, 256), {"foo": 1}, settings=settings)
    with pytest.raises(ValueError, match="config: stages expects an integer"):
        build_mod.build(GemmProblem(64, 128, 256), {"stages": 4.0}, settings=settings)


@pytest.mark.parametrize("n,k,field", [(2**31, 16, "GemmProblem.n: at most"),
                                       (64, 2**31 - 16, "GemmProblem.k: at most")])
def test_dims_beyond_the_kernels_indices(n: int, k: int, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        GemmProblem(64, n, k)


def test_scale_recipe_inferred_from_shapes() -> None:
    from gemmgen.ir import ScaleRecipe
    from gemmgen.runtime.validate import dense_recipe
    m, n, k = 4, 16, 300
    f = torch.ones
    assert dense_recipe(f(m, 3), f(1, 3), m, n, k, None) is ScaleRecipe.A1x128_B128x128
    assert dense_recipe(f(()), f(()), m, n, k, None) is ScaleRecipe.TENSOR
    assert dense_recipe(f(1), f(1, 1), m, n, k, "tensorwise") is ScaleRecipe.TENSOR
    assert dense_recipe(f(m), f(n), m, n, k, None) is ScaleRecipe.CHANNEL
    assert dense_recipe(f(m, 1), f(1, n), m, n, k, "rowwise") is ScaleRecipe.CHANNEL
    with pytest.raises(ValueError, match=r"sb: expected shape \(16,\)"):
        dense_recipe(f(m), f(n + 8), m, n, k, None)
    with pytest.raises(ValueError, match="recipe: expected one of"):
        dense_recipe(f(m), f(n), m, n, k, "per-row")
    with pytest.raises(ValueError, match="sa: expected shape"):
        dense_recipe(f(m, 3), f(()), m, n, k, "tensor")
    with pytest.raises(TypeError, match="sb: expected dtype torch.float32"):
        dense_recipe(f(m), f(n, dtype=torch.float64), m, n, k, None)


def test_bf16_gemm_bad_arguments_are_named() -> None:
    a, b = torch.zeros(4, 64, dtype=torch.bfloat16), torch.zeros(16, 64, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="a: expected dtype torch.bfloat16"):
        gemmgen.bf16_gemm_nt(a.float(), b, torch.zeros(4, 16, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="b: expected shape"):
        gemmgen.bf16_gemm_nt(a, b[:, :32], torch.zeros(4, 16, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="accumulate"):
        gemmgen.bf16_gemm_nt(a[:0], b, torch.zeros(0, 16, dtype=torch.bfloat16), accumulate=True)
    with pytest.raises(ValueError, match="out: expected shape"):
        gemmgen.bf16_gemm_nt(a, b, torch.zeros(4, 8, dtype=torch.bfloat16))


# ---------------------------------------------------------------- fp8_gemm_nt_wgrad (1x128/1x128, fp32 out)

def _wgrad_operands(m: int = 4, n: int = 16, k: int = 256):
    a = torch.zeros(m, k).to(E4M3)
    b = torch.zeros(n, k).to(E4M3)
    sa = torch.ones(m, -(-k // 128))
    sb = torch.ones(n, -(-k // 128))  # one scale per row of B per 128 columns of K
    out = torch.zeros(m, n)
    return a, sa, b, sb, out


@pytest.mark.parametrize("mutate,exc,words", [
    (lambda o: (*o[:4], o[4].to(torch.bfloat16)), TypeError, ["out:", "float32", "bfloat16"]),
    (lambda o: (*o[:4], torch.zeros(4, 8)), ValueError, ["out:", "(4, 16)", "(4, 8)"]),
    (lambda o: (*o[:3], torch.ones(1, 2), o[4]), ValueError, ["sb:", "(16, 2)", "(1, 2)", "128x128 block scales"]),
    (lambda o: (*o[:3], torch.ones(16, 3), o[4]), ValueError, ["sb:", "(16, 2)", "(16, 3)"]),
    (lambda o: (*o[:3], o[3].double(), o[4]), TypeError, ["sb:", "float32", "float64"]),
    (lambda o: (o[0], torch.ones(4, 1), *o[2:]), ValueError, ["sa:", "(4, 2)", "(4, 1)"]),
    (lambda o: (o[0].float(), *o[1:]), TypeError, ["a:", "float8_e4m3fn"]),
    (lambda o: (o[0], o[1], torch.zeros(16, 128).to(E4M3), *o[3:]), ValueError, ["b:", "K=256"]),
    (lambda o: (o[0], o[1], torch.zeros(12, 256).to(E4M3), torch.ones(12, 2), torch.zeros(4, 12)), ValueError,
     ["b:", "multiple of 8", "N=12"]),
])
def test_wgrad_bad_arguments_are_named(mutate, exc, words) -> None:
    a, sa, b, sb, out = mutate(_wgrad_operands())
    with pytest.raises(exc) as info:
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


def test_wgrad_accumulate_must_be_a_bool() -> None:
    a, sa, b, sb, out = _wgrad_operands()
    with pytest.raises(TypeError, match="accumulate: expected a bool"):
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, accumulate=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="b: expected a"):
        gemmgen.fp8_gemm_nt_wgrad((a, sa), b, out)  # type: ignore[arg-type]


def test_wgrad_m_zero_and_no_gpu() -> None:
    a, sa, b, sb, out = _wgrad_operands(m=0)
    assert gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out) is out
    if not gpu_available():
        a, sa, b, sb, out = _wgrad_operands()
        with pytest.raises(NoGpuError, match="no CUDA GPU"):
            gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, accumulate=False)


def test_wgrad_sb_strides_must_fit_the_kernels_offsets() -> None:
    from gemmgen.runtime.validate import _sb_env

    sb = torch.ones(16, 2)
    assert _sb_env(sb) == {"sb_stride_n": 2, "sb_stride_k": 1, "sb_tma": 0}  # row-major: gathered
    assert _sb_env(sb.t().contiguous().t())["sb_tma"] == int(sb.t().contiguous().t().data_ptr() % 16 == 0)

    class Huge:  # strides past 2^31 elements, without allocating them
        shape = (16, 2)

        def stride(self) -> tuple[int, int]:
            return (2**27, 2**27)

    with pytest.raises(ValueError, match="sb: strides"):
        _sb_env(Huge())  # type: ignore[arg-type]


def test_k_grouped_wgrad_bad_arguments_are_named() -> None:
    ks, m, n = [128, 0, 256], 64, 16
    a = torch.zeros(m, sum(ks)).to(E4M3)
    b = torch.zeros(n, sum(ks)).to(E4M3)
    sa, sb = torch.ones(m, 3), torch.ones(n, 3)
    out = torch.zeros(3, m, n)
    call = gemmgen.k_grouped_fp8_gemm_nt_wgrad
    with pytest.raises(ValueError, match="ks: every group's K must be a multiple of 128"):
        call((a, sa), (b, sb), out, [128, 64, 192])
    with pytest.raises(TypeError, match="ks: expected a list of ints"):
        call((a, sa), (b, sb), out, 384)
    with pytest.raises(ValueError, match="out: expected 2 groups"):
        call((a, sa), (b, sb), out, [128, 256])
    with pytest.raises(ValueError, match=r"a: expected K = sum\(ks\) = 512"):
        call((a, sa), (b, sb), torch.zeros(2, m, n), [256, 256])
    with pytest.raises(ValueError, match="a: M must be a multiple of 64"):
        call((a[:32], sa[:32]), (b, sb), torch.zeros(3, 32, n), ks)
    with pytest.raises(ValueError, match=r"sb: expected shape \(16, 3\)"):
        call((a, sa), (b, torch.ones(1, 3)), out, ks)
    with pytest.raises(TypeError, match="out: expected a float32"):
        call((a, sa), (b, sb), out.bfloat16(), ks)
    none = torch.zeros(0, m, n)  # no groups: nothing to do, no GPU needed
    assert call((a[:, :0], sa[:, :0]), (b[:, :0], sb[:, :0]), none, []) is none


def test_k_grouped_kernel_called_directly_checks_m_against_its_tile(monkeypatch) -> None:
    """A built k-grouped kernel counts whole tiles per group: an M its block_m does not divide is refused (it would
    leave rows of out unwritten), and its K is a run-time value (any sum(ks) is accepted)."""
    from gemmgen.ir import DType, GemmKind, ScaleRecipe
    from gemmgen.runtime import validate

    kern = gemmgen.build(GemmProblem(256, 4096, 512, kind=GemmKind.K_GROUPED, groups=2, out_dtype=DType.FP32,
                                     accumulate=True, scales=ScaleRecipe.A1x128_B1x128), {"block_m": 128})
    assert kern.config.block_m == 128
    launched = []
    monkeypatch.setattr(type(kern.launcher), "launch", lambda self, tensors, env: launched.append(env))
    monkeypatch.setattr(validate, "_on_gpu", lambda *args: None)
    monkeypatch.setattr(validate, "k_offsets", lambda ks, device: torch.zeros(len(ks) + 1, dtype=torch.int32))

    def operands(m: int, ks: list[int]):
        k = sum(ks)
        return ((torch.zeros(m, k).to(E4M3), torch.ones(m, k // 128), torch.zeros(4096, k).to(E4M3),
                 torch.ones(4096, k // 128), torch.zeros(len(ks), m, 4096)), ks)

    (a, sa, b, sb, out), ks = operands(192, [256, 256])
    with pytest.raises(ValueError, match="a: this k-grouped kernel's tiles have 128 rows"):
        kern.launcher(a, sa, b, sb, out, ks)
    (a, sa, b, sb, out), ks = operands(256, [128, 256])  # K = 384, not the expected 512: fine
    kern.launcher(a, sa, b, sb, out, ks)
    assert launched and launched[-1]["k"] == 384


def test_set_pdl_checks_its_argument_and_a_calls_own_config_wins() -> None:
    """gemmgen.set_pdl / gemmgen.pdl(): a bool, or a clear error; the setting pins pdl = 1 for calls that do not pin
    it themselves (a config dict, or a GemmConfig leaving pdl None); the context manager restores the setting."""
    from gemmgen import api

    with pytest.raises(TypeError, match="enabled: expected a bool"):
        gemmgen.set_pdl(1)  # type: ignore[arg-type]
    assert api._overrides(None) is None
    with gemmgen.pdl():
        assert api._overrides(None) == {"pdl": 1}
        assert api._overrides({"block_n": 64}) == {"block_n": 64, "pdl": 1}
        assert api._overrides({"pdl": 0}) == {"pdl": 0}
        assert dict(api._overrides(gemmgen.GemmConfig(block_n=64)) or {})["pdl"] == 1
        with gemmgen.pdl(False):
            assert api._overrides(None) is None
        assert api._overrides(None) == {"pdl": 1}
    assert api._overrides(None) is None
    with pytest.raises(ValueError, match="GemmConfig.pdl: expected 0 or 1, got 3"):
        gemmgen.get_kernel(64, 7168, 2048, gemmgen.H200_SXM, {"pdl": 3})


def test_argument_errors_come_before_the_no_gpu_check(monkeypatch) -> None:
    """A call can be validated on a CPU box: accumulate with a bf16 out, an unknown config field and a config that is
    not a mapping are reported by name before the no-GPU error."""
    from gemmgen.runtime import driver

    monkeypatch.setattr(driver, "gpu_available", lambda: False)
    a = (torch.zeros(64, 256).to(torch.float8_e4m3fn), torch.ones(64, 2))
    b = (torch.zeros(128, 256).to(torch.float8_e4m3fn), torch.ones(1, 2))
    out = torch.zeros(64, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="accumulate: .* needs out float32"):
        gemmgen.fp8_gemm_nt(a, b, out, accumulate=True)
    with pytest.raises(ValueError, match="config: unknown field 'bogus'"):
        gemmgen.fp8_gemm_nt(a, b, out, config={"bogus": 1})
    with pytest.raises(TypeError, match="config: expected a dict"):
        gemmgen.fp8_gemm_nt(a, b, out, config=[("block_m", 64)])
    with pytest.raises(TypeError, match="config: expected a dict"):
        gemmgen.m_grouped_fp8_gemm_nt_masked(a, b, out, torch.zeros(1, dtype=torch.int32), 64, config=[1])
    with pytest.raises(gemmgen.NoGpuError):
        gemmgen.fp8_gemm_nt(a, b, out)


def test_build_takes_the_cli_target_spellings() -> None:
    problem = GemmProblem(128, 256, 512)
    assert {gemmgen.build(problem, None, t).target for t in ("h100", "H100")} == {gemmgen.H100_SXM}
    assert gemmgen.build(problem, None, "sm_90a").target == gemmgen.H200_SXM
    with pytest.raises(ValueError, match="target: expected one of"):
        gemmgen.build(problem, None, "a100")
    with pytest.raises(TypeError, match="target: expected a gemmgen.Target"):
        gemmgen.build(problem, None, 90)
    with pytest.raises(TypeError, match="config: expected a dict"):
        gemmgen.build(problem, [("block_m", 64)], "h100")
