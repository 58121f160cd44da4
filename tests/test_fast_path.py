"""fp8_gemm_nt's flat fast path (validate.fast_dense) accepts nothing the full checks refuse, and returns what they
return: compared on CPU tensors over valid calls and one-thing-wrong variants (the device test is the one part not
exercised here: tests/test_gpu_gemm.py runs the path on the GPU)."""

from __future__ import annotations

import pytest
import torch

import gemmgen
from gemmgen.ir import ScaleRecipe
from gemmgen.runtime import validate


def _cpu_on_gpu(a, tma, pointers, gathered=None) -> None:
    """validate._on_gpu without its device-type test (CPU tensors stand in for CUDA ones)."""
    index = a.get_device()
    for name, x in tma.items():  # (their strides: validate.operand_layout, before this)
        if x.get_device() != index or x.data_ptr() % validate.TMA_ADDRESS_ALIGN:
            raise ValueError(name)
    for name, x in (*pointers.items(), *(gathered or {}).items()):
        if x.get_device() != index:
            raise ValueError(name)
    for name, x in pointers.items():
        if not x.is_contiguous():
            raise ValueError(name)


def _misaligned(x: torch.Tensor) -> torch.Tensor:
    """A copy of x one element past a 16-byte boundary."""
    raw = torch.empty(x.numel() + 16, dtype=x.dtype)
    return raw[1:1 + x.numel()].view(x.shape)


def _cases():
    for m, n, k in [(1, 2112, 7168), (5, 576, 1280), (64, 7168, 2048), (300, 1000, 2320), (129, 136, 1296)]:
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k))
        b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k))
        out = torch.empty(m, n, dtype=torch.bfloat16)
        yield f"{m}x{n}x{k}-valid", (a, sa), (b, sb), out, True
        yield "sa-row-major", (a, sa.contiguous()), (b, sb), out, True  # gathered by the kernel
        yield "sa-strided", (a, torch.zeros(m, 2 * sa.shape[1])[:, ::2].copy_(sa)), (b, sb), out, True
        yield "sa-misaligned", (a, _misaligned(sa.contiguous())), (b, sb), out, True  # gathered: no TMA alignment
        yield "sa-shape", (a, sa[:, :-1]), (b, sb), out, False
        yield "sb-transposed", (a, sa), (b, sb.t().contiguous().t()), out, False
        yield "out-fp32", (a, sa), (b, sb), torch.empty(m, n), False
        yield "out-every-other-column", (a, sa), (b, sb), torch.empty(m, 2 * n, dtype=torch.bfloat16)[:, ::2], False
        # strided operands TMA addresses (a row stride of at least the row, a multiple of 16 bytes): padded K, a
        # column slice of a wider output; and a row stride TMA cannot take (not a 16-byte multiple)
        padded = torch.zeros(m, k + 128, dtype=a.dtype)[:, :k].copy_(a)
        yield "a-padded-k", (padded, sa), (b, sb), out, True
        yield "b-padded-k", (a, sa), (torch.zeros(n, k + 16, dtype=b.dtype)[:, :k].copy_(b), sb), out, True
        yield "out-column-slice", (a, sa), (b, sb), torch.empty(m, n + 8, dtype=torch.bfloat16)[:, :n], True
        yield "out-right-half", (a, sa), (b, sb), torch.empty(m, 2 * n, dtype=torch.bfloat16)[:, n:], True
        yield "a-stride-not-16-bytes", (torch.zeros(m, k + 8, dtype=a.dtype)[:, :k], sa), (b, sb), out, m == 1
        yield "out-shape", (a, sa), (b, sb), torch.empty(m, n + 8, dtype=torch.bfloat16), False
        yield "a-e5m2", (a.view(torch.uint8).view(torch.float8_e5m2), sa), (b, sb), out, False
        yield "a-misaligned", (_misaligned(a), sa), (b, sb), out, False
        yield "out-misaligned", (a, sa), (b, sb), _misaligned(out), False
        yield "lists", [a, sa], [b, sb], out, False
        yield "sb-shape", (a, sa), (b, sb[:, :-1]), out, False
        yield "sa-dtype", (a, sa.double()), (b, sb), out, False
        yield "m0", (a[:0], sa[:0]), (b, sb), out[:0], False
        yield "b-short-k", (a, sa), (b[:, :-16], sb), out, False


CASES = list(_cases())


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_fast_path_accepts_only_what_the_full_checks_accept(case, monkeypatch) -> None:
    name, a, b, out, expect_fast = case
    monkeypatch.setattr(validate, "_on_gpu", _cpu_on_gpu)
    fast = validate.fast_dense(a, b, out, cuda=False)
    assert (fast is not None) == expect_fast, name
    try:
        pair_a, pair_b = validate.gemm_operands(a, "a"), validate.gemm_operands(b, "b")
        slow = validate.check_dense_scaled(*pair_a[:1], pair_a[1], *pair_b[:1], pair_b[1], out)
    except (TypeError, ValueError):
        slow = None
    if fast is None:
        return
    assert slow is not None, f"{name}: the fast path accepted what the full checks refuse"
    tensors, env, recipe = slow
    fast_tensors, fast_env = validate.fast_dense_operands(a, b, out, fast)
    assert recipe is ScaleRecipe.A1x128_B128x128 and env == fast_env, name
    assert all(tensors[key] is fast_tensors[key] for key in tensors) and tensors.keys() == fast_tensors.keys(), name
    m, n, k = tensors["a"].shape[0], tensors["b"].shape[0], tensors["a"].shape[1]
    assert fast[:4] == (m, n, k, -1), name  # the DenseCall key: M, N, K, device
    assert fast[7:12] == tuple(tensors[key].data_ptr() for key in ("a", "sa", "b", "sb", "out")), name
    assert fast[12:] == (env["a_ld"], env["b_ld"], env["out_ld"]), name


def test_fast_path_needs_cuda_tensors() -> None:
    name, a, b, out, _ = CASES[0]
    assert validate.fast_dense(a, b, out) is None  # CPU tensors: the full checks say why (no GPU / not CUDA)
    assert all(validate.fast_dense(a, b, o, cuda=False) is None for o in (None, 3, "out"))
