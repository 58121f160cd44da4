"""The stride rules of the TMA operands (runtime/validate.operand_layout), on CPU tensors: what each call accepts (a
padded K, a column slice of a wider output, a masked layout with padded rows, a weight expanded over the groups),
the map sizes it hands the launcher, and the errors for what TMA cannot address, raised before any GPU is needed."""

from __future__ import annotations

import pytest
import torch

import gemmgen
from gemmgen.errors import NoGpuError
from gemmgen.runtime import validate

E4M3 = torch.float8_e4m3fn


def _fp8(*shape: int) -> torch.Tensor:
    return torch.zeros(shape, dtype=E4M3)


def test_padded_k_and_column_slices_are_read_through_their_row_strides() -> None:
    a = _fp8(129, 640)[:, :576]  # a quantizer padding K to 128 hands back the [:, :K] view
    assert validate.operand_layout(a, "a", 1) == {"a_ld": 640, "a_rows": 129}
    out = torch.empty(129, 4224, dtype=torch.bfloat16)[:, 2112:]  # the right half of a concatenated projection
    assert validate.operand_layout(out, "out", 2, writes=True) == {"out_ld": 4224, "out_rows": 129}
    one_row = _fp8(4, 640)[2:3, :576]  # a single row has no row stride of its own
    assert validate.operand_layout(one_row, "a", 1) == {"a_ld": 576, "a_rows": 1}


def test_grouped_operands_stack_their_groups_their_own_stride_apart() -> None:
    a = _fp8(3, 160, 640)[:, :96, :576]  # masked A with padded rows and K
    assert validate.operand_layout(a, "a", 1) == {"a_ld": 640, "a_rows": 2 * 160 + 96, "a_gr": 160}
    gate = _fp8(4, 512, 576)[:, :256]  # the gate half of a fused [G, 2N, K] weight
    assert validate.operand_layout(gate, "b", 1) == {"b_ld": 576, "b_rows": 3 * 512 + 256, "b_gr": 512}
    shared = _fp8(1, 256, 576).expand(4, 256, 576)  # one weight read by every group
    assert validate.operand_layout(shared, "b", 1) == {"b_ld": 576, "b_rows": 256, "b_gr": 0}
    out = torch.empty(3, 128, 320, dtype=torch.bfloat16)[:, :96, 64:]
    assert validate.operand_layout(out, "out", 2, writes=True) == {"out_ld": 320, "out_rows": 2 * 128 + 96,
                                                                    "out_gr": 128}


@pytest.mark.parametrize("x,name,elem,writes,says", [
    (_fp8(64, 584)[:, :576], "a", 1, False, "multiple of 16 bytes"),  # row stride 584: not a 16-byte multiple
    (_fp8(576, 64).t(), "a", 1, False, "last stride 1"),  # K-major is required (a transposed view)
    (_fp8(64 * 576).as_strided((64, 576), (16, 1)), "a", 1, False, "at least the row"),  # overlapping rows
    (torch.empty(8, 2116, dtype=torch.bfloat16)[:, :2112], "out", 2, True, "multiple of 16 bytes"),  # 4232 B rows
    (torch.empty(8, 4224)[:, ::2], "out", 4, True, "last stride 1"),
], ids=["row-stride-not-16-bytes", "transposed", "rows-overlap", "out-row-stride", "out-every-other-column"])
def test_what_tma_cannot_address_is_refused_naming_the_argument(x, name, elem, writes, says) -> None:
    with pytest.raises(ValueError, match=rf"^{name}: .*{says}"):
        validate.operand_layout(x, name, elem, writes)


def test_grouped_strides_tma_cannot_address() -> None:
    odd = _fp8(3 * 100 * 576).as_strided((3, 96, 576), (100 * 576 + 16, 576, 1))  # group stride not in whole rows
    with pytest.raises(ValueError, match=r"^a: .*group stride must be a multiple of its row stride \(576"):
        validate.operand_layout(odd, "a", 1)
    overlap = torch.empty(4 * 64 * 256, dtype=torch.bfloat16).as_strided((3, 96, 256), (64 * 256, 256, 1))
    with pytest.raises(ValueError, match=r"^out: .*groups of out must not overlap"):
        validate.operand_layout(overlap, "out", 2, writes=True)
    assert validate.operand_layout(overlap, "a", 2)["a_gr"] == 64  # a read operand's groups may overlap


def test_public_calls_check_strides_before_needing_a_gpu() -> None:
    """On this CPU-only machine a call with an operand TMA cannot address says which and why; a strided operand TMA
    can address passes the checks and only then meets the missing GPU."""
    m, n, k = 64, 256, 576
    sa, sb = torch.ones(m, 5), torch.ones(2, 5)
    out = torch.empty(m, n, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"^a: .*multiple of 16 bytes"):
        gemmgen.fp8_gemm_nt((_fp8(m, 584)[:, :k], sa), (_fp8(n, k), sb), out)
    with pytest.raises(ValueError, match=r"^out: .*multiple of 16 bytes"):
        gemmgen.bf16_gemm_nt(torch.zeros(m, k, dtype=torch.bfloat16), torch.zeros(n, k, dtype=torch.bfloat16),
                             torch.empty(m, n + 4, dtype=torch.bfloat16)[:, :n])
    with pytest.raises(NoGpuError):
        gemmgen.fp8_gemm_nt((_fp8(m, 640)[:, :k], sa), (_fp8(n, 704)[:, :k], sb),
                            torch.empty(m, 2 * n, dtype=torch.bfloat16)[:, n:])
    masked_m = torch.zeros(3, dtype=torch.int32)
    with pytest.raises(ValueError, match=r"^out: .*groups of out must not overlap"):
        ov = torch.empty(4 * 64 * n, dtype=torch.bfloat16).as_strided((3, 64, n), (32 * n, n, 1))
        gemmgen.m_grouped_fp8_gemm_nt_masked((_fp8(3, m, k), torch.ones(3, m, 5)), (_fp8(3, n, k), torch.ones(3, 2, 5)),
                                             ov, masked_m, expected_m=8)
