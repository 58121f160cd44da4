"""DenseCall (runtime/launch.py) writes, per call, exactly what a full fill of a fresh parameter block writes: checked
on CPU over random calls mixing SA layouts (TMA, row-major, strided), two weight tensors and contiguous or strided A
and out (a padded K, a column slice: new row strides in the maps), with the driver's touch
points stubbed (tensor-map templates are random 128-byte maps whose address word is known, the launch records the
block). The SA map is skipped where SA is gathered: the kernel does not read it then."""

from __future__ import annotations

import ctypes
import random

import pytest
import torch

import gemmgen
from gemmgen.ir import ParamKind, preset
from gemmgen.runtime import cdriver, launch, validate
from gemmgen.runtime.workspace import Workspace

M, N, K = 40, 1024, 2048  # a kernel whose 2 K splits meet in a workspace: its pointers are in the block too
SIZES = {ParamKind.TMAP: 128, ParamKind.POINTER: 8, ParamKind.INT32: 4}


def _block_bytes(block: launch.ParamBlock, size: int) -> bytes:
    base = (ctypes.addressof(block._raw) + 63) // 64 * 64
    return ctypes.string_at(base, size)


def _stub_templates(monkeypatch, fail: set[int]) -> None:
    """MapCache.template gives a random map per key whose word 1 holds the address >> 4; maps in `fail` are not ok
    (their encode goes to MapEncoder.encode, stubbed to write a recognisable map)."""
    rng = random.Random(7)
    templates: dict = {}

    def template(self, i, encoder, m, env, values):
        key = (i, values)
        if key not in templates:
            t = templates[key] = cdriver.MapTemplate.__new__(cdriver.MapTemplate)
            t.ok, t.word, t.shift = i not in fail, 1, 4
            t.bytes = ctypes.create_string_buffer(192)
            t._base = (ctypes.addressof(t.bytes) + 63) // 64 * 64
            ctypes.memmove(t._base, bytes(rng.randrange(256) for _ in range(128)), 128)
        return templates[key]

    def encode(self, dst, address, sizes):
        ctypes.memmove(dst, address.to_bytes(8, "little") * 16, 128)
        return 0

    monkeypatch.setattr(launch.MapCache, "template", template)
    monkeypatch.setattr(cdriver.MapEncoder, "encode", encode)
    monkeypatch.setattr(launch, "_current_stream", lambda index: 0)
    monkeypatch.setattr(launch, "is_capturing", lambda: False)


def _operands(layout: str, weights, padded: bool):
    """SA in `layout`; `padded`: A a [:, :K] view of a wider buffer (row stride K + 128) and out the left columns
    of a wider output, so the maps' row strides change between calls too."""
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(M, K))
    kb = (K + 127) // 128
    if layout == "row":
        sa = sa.contiguous()
    elif layout == "strided":
        sa = torch.zeros(M, 2 * kb)[:, ::2].copy_(sa)
    out = torch.empty(M, N, dtype=torch.bfloat16)
    if padded:
        a = torch.zeros(M, K + 128, dtype=a.dtype)[:, :K].copy_(a)
        out = torch.empty(M, N + 64, dtype=torch.bfloat16)[:, :N]
    b, sb = random.choice(weights)
    return (a, sa), (b, sb), out


@pytest.mark.parametrize("fail", [set(), {0}], ids=["templates-ok", "a-map-encoded-by-the-driver"])
def test_dense_call_writes_what_a_full_fill_writes(monkeypatch, fail: set[int]) -> None:
    _stub_templates(monkeypatch, fail)
    # the split-K workspace on the CPU (device -1), one per stream as on a GPU
    made: dict[int, Workspace] = {}
    def views(stream: int) -> dict[str, torch.Tensor]:
        return {"ws_partials": torch.zeros(8 + stream), "ws_counters": torch.zeros(4, dtype=torch.int32)}

    monkeypatch.setattr(launch.Workspaces, "get", lambda self, device, stream, m, g: made.setdefault(
        stream, Workspace(8, 4, views(stream))))
    built = gemmgen.get_kernel(M, N, K, preset("h200"))
    assert built.config.split_global == 1, built.name
    launcher = launch.Launcher(built)
    launcher._functions[-1] = 1  # the module "loaded" on device -1 (CPU tensors)
    plan = built.kernel.plan
    slots, size = launch.block_layout(plan)
    sent: list[bytes] = []
    call = launch.DenseCall(launcher, M, -1)
    launcher._launch_fn = lambda cfg, func, params, extra: sent.append(_block_bytes(call.block, size)) or 0
    random.seed(1)
    weights = [gemmgen.per_block_cast_to_fp8(torch.randn(N, K)) for _ in range(2)]
    stream = [0]  # calls 20-39 on another stream: its workspace, then back (the maps written since must be kept)
    monkeypatch.setattr(launch, "_current_stream", lambda index: stream[0])
    for i in range(60):
        stream[0] = 1 if 20 <= i < 40 else 0
        a, b, out = _operands(("row", "tma", "strided")[i % 3] if i < 6 else random.choice(["tma", "row", "strided"]),
                              weights, padded=random.random() < 0.3)
        fast = validate.fast_dense(a, b, out, cuda=False)
        assert fast is not None
        assert call(fast, a, b, out) is out
        reference = launch.ParamBlock(plan, launcher._map_cache)
        tensors, env = validate.fast_dense_operands(a, b, out, fast)
        reference.fill({**tensors, **made[stream[0]].views}, env, "reference")
        want = _block_bytes(reference, size)
        for s in slots:
            if s.source == "sa" and s.kind is ParamKind.TMAP and not fast[6]:
                continue  # SA gathered on this call: its map is not read
            got = sent[-1][s.offset:s.offset + SIZES[s.kind]]
            assert got == want[s.offset:s.offset + SIZES[s.kind]], f"call {i}: {plan.params[s.index].name}"
    assert (call.words is not None) == (not fail)  # the one-word writes ran, or every call took the full fill
