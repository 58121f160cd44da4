"""GPU tier: programmatic dependent launch (gemmgen.pdl / GemmConfig.pdl). A PDL kernel may start while the previous
kernel in the stream still runs, so these tests put a kernel that is still writing the same output right before it:
without its griddepcontrol.wait, the later kernel's tiles could land first and be overwritten (or be added to a
partial sum). Outputs are poisoned first; results are compared bit for bit with the same calls without PDL, and
against a float64 reference. (That the wait precedes every global access in every kernel kind is checked on the CPU:
tests/test_compile_matrix.py.)"""

from __future__ import annotations

import pytest
import torch
from shapes import FP8_FP32_OUT_REL

import gemmgen
from gemmgen import api
from gemmgen.ir import DType
from gemmgen.quant import dequantize_a, dequantize_b

pytestmark = pytest.mark.gpu

# The first kernel: one round of long tiles (K = 16384, 64 tiles of 128 x 128 on 64 CTAs), each stored at the very
# end; the second kernel (the same out, K = 256) is triggered once the first has issued its last loads, and its CTAs
# start on the 68 SMs the first leaves idle while the first is still storing the very tiles they write.
M, N, K_LONG, K_SHORT = 256, 4096, 16384, 256
FIRST = {"block_m": 128, "block_n": 128, "num_sms": 64, "pdl": 1}


def _operands(m: int, n: int, k: int):
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    return gemmgen.per_token_cast_to_fp8(x), gemmgen.per_block_cast_to_fp8(w)


def _reference(a, b) -> torch.Tensor:
    return dequantize_a(*a) @ dequantize_b(*b).t()


@pytest.fixture
def cache(settings, monkeypatch):
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))


# A primary kernel that lets its dependents launch at once, then idles for `ns` nanoseconds and only then fills `out`
# (n bf16 words) with `value`: a PDL kernel after it that did not wait would store first and be overwritten.
_SPIN_FILL = r"""
extern "C" __global__ void spin_then_fill(unsigned short* out, long long n, unsigned short value, long long ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < static_cast<unsigned long long>(ns));
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = value;
}
"""
_SPIN_FILL_FUNC: dict[int, object] = {}


def _spin_then_fill(out: torch.Tensor, value: int, ns: int) -> None:
    """Launch _SPIN_FILL on 8 CTAs (the GEMM after it finds free SMs) on the current stream; keeps its arguments
    alive until the launch returned (cuLaunchKernelEx copies them)."""
    import ctypes

    from gemmgen.runtime import cdriver, driver
    from gemmgen.toolchain.nvrtc import compile_cuda

    device = out.get_device()
    if device not in _SPIN_FILL_FUNC:
        result = compile_cuda(_SPIN_FILL, "spin_then_fill.cu", "sm_90a")
        assert result.ok, result.log
        driver.make_current(device)
        module, func = driver.load_function(result.cubin, "spin_then_fill", 0)
        _SPIN_FILL_FUNC[device] = (module, int(func))
    func = _SPIN_FILL_FUNC[device][1]
    args = [ctypes.c_uint64(out.data_ptr()), ctypes.c_int64(out.numel()), ctypes.c_uint16(value), ctypes.c_int64(ns)]
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in args])
    cfg = cdriver.launch_config(8, 256, 0, torch.cuda.current_stream().cuda_stream, 1)
    code = cdriver.lib().cuLaunchKernelEx(ctypes.byref(cfg), func, params, None)
    assert code == 0, cdriver.error_text(code)


@pytest.mark.parametrize("pdl", [1, 0], ids=["pdl", "no_pdl"])
def test_pdl_kernel_waits_for_a_primary_that_writes_its_out_late(cache, pdl: int) -> None:
    """The previous kernel triggers its dependents at its start and writes `out` 200 us later; the PDL GEMM starts at
    once (the previous kernel holds 8 SMs) and is done in ~10 us, so only its griddepcontrol.wait keeps its result
    from being overwritten. Run without PDL too (the stream orders the two; the same check must hold)."""
    m, n, k = 64, 4096, 2048
    a, b = _operands(m, n, k)
    plain = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt(a, b, plain, config={"pdl": pdl})  # builds and loads the kernel
    torch.cuda.synchronize()
    out = torch.empty_like(plain)
    for _ in range(3):
        out.fill_(float("nan"))
        _spin_then_fill(out, 0x3F80, 200_000)  # bf16 1.0
        gemmgen.fp8_gemm_nt(a, b, out, config={"pdl": pdl})
        torch.cuda.synchronize()
        ones = int((out == 1.0).sum())
        assert torch.equal(out, plain), f"{int((out != plain).sum())} outputs differ ({ones} hold the earlier fill)"


@pytest.mark.parametrize("graph", [False, True], ids=["stream", "cuda_graph"])
def test_pdl_second_kernel_waits_for_the_first_one_writing_the_same_out(cache, graph: bool) -> None:
    a1, b1 = _operands(M, N, K_LONG)
    a2, b2 = _operands(M, N, K_SHORT)
    plain = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt(a2, b2, plain)  # the second call alone, without PDL
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)

    def both() -> None:
        with gemmgen.pdl():
            gemmgen.fp8_gemm_nt(a1, b1, out, config=FIRST)
            gemmgen.fp8_gemm_nt(a2, b2, out)  # the fast path, under gemmgen.pdl()

    both()  # builds both kernels
    torch.cuda.synchronize()
    second = api._FAST_CALLS_PDL[(M, N, K_SHORT, torch.cuda.current_device())].launcher.built
    assert second.name.endswith("_pdl") and second.kernel.plan.launch.pdl, second.name
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
    target = api.device_target(torch.cuda.current_device())
    for config in (FIRST, None):
        with gemmgen.pdl():
            kernel = gemmgen.get_kernel(M, N, K_SHORT if config is None else K_LONG, target,
                                        api._overrides(config), out_dtype=DType.FP32,
                                        accumulate=config is None)
        assert kernel.name.endswith("_pdl"), kernel.name  # what gemmgen.pdl() makes these calls launch

    def run(pdl: bool) -> torch.Tensor:
        out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
        with gemmgen.pdl(pdl):
            gemmgen.fp8_gemm_nt(a1, b1, out, config={**FIRST, "pdl": int(pdl)})
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


def test_pdl_masked_grouped_reads_the_group_sizes_a_kernel_wrote_before_it(cache) -> None:
    """The masked kernel reads masked_m on the device: written by the kernel right before a PDL launch (an add
    kernel, not a copy), the new sizes must be the ones used (rows past them stay poisoned)."""
    groups, m_max, n, k = 4, 256, 4096, 7168
    x = torch.randn(groups, m_max, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16))
    masked_m = torch.zeros(groups, device="cuda", dtype=torch.int32)
    sizes = [200, 0, 256, 17]
    delta = torch.tensor(sizes, device="cuda", dtype=torch.int32)
    out = torch.full((groups, m_max, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    with gemmgen.pdl():
        gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, 192)  # built; every group empty
        torch.cuda.synchronize()
        assert out.isnan().all(), "a group of 0 rows was written"
        masked_m.add_(delta)  # the kernel right before the PDL launch writes the sizes
        gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, 192)
    torch.cuda.synchronize()
    for g, rows in enumerate(sizes):
        assert out[g, rows:].isnan().all(), f"group {g}: rows past masked_m = {rows} written"
        if rows:
            ref = _reference((a[g, :rows], sa[g, :rows]), (b[g], sb[g]))
            got = out[g, :rows].double()
            assert ((got - ref).abs() <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all(), f"group {g}"
