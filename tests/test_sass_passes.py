"""SASS control-bit passes (gemmgen.sass.control / patch, passes/sass_interleave_ffma, passes/sass_register_reuse)
and their build stage, on CPU: the bit layout against nvdisasm's own reading, the rules on synthetic runs, and three
real kernels built with both passes (patched cubin re-disassembled and verified, only control bits changed)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import struct
from pathlib import Path

import pytest

from gemmgen.cache import cache_key
from gemmgen.errors import GemmgenError, ToolNotFoundError
from gemmgen.ir import GemmProblem
from gemmgen.passes import sass_interleave_ffma, sass_register_reuse
from gemmgen.sass import patch
from gemmgen.sass.control import CONTROL_MASK, REUSE_MASK, Control, decode, encode
from gemmgen.sass.parse import Instruction, parse
from gemmgen.settings import Settings
from gemmgen.stages import BuiltKernel, build, default_sass_passes, resolve_sass_passes
from gemmgen.toolchain import disasm

BOTH = ("interleave_ffma", "register_reuse")
# (shape, what the passes must do there with NVRTC 13.0): the m256n128 kernel's runs already yield every second FFMA
# (ptxas did it), the m64n112 two-set kernel has a 49-FFMA run without yields, the m64n128 two-set kernel has runs
# where every FFMA reuses the scale (so interleaving must clear reuse flags).
SHAPES = {"m256n128": (4096, 7168, 16384), "m64n112": (128, 7168, 2048), "m64n128": (64, 32768, 512)}
# 128x7168x2048 streams one 128-row tile by default since the decode rule reaches M = 128: pin the 64x112 tile
CONFIGS = {"m64n112": {"block_m": 64, "block_n": 112}}
FIELDS = {"stall": 4, "write_barrier": 3, "read_barrier": 3, "wait_mask": 6, "reuse": 4}


# --- control bits ------------------------------------------------------------------------------------------------

def _random_control(rng: random.Random) -> Control:
    return Control(rng.randrange(16), rng.random() < 0.5, rng.randrange(8), rng.randrange(8), rng.randrange(64),
                   rng.randrange(16))


def test_every_value_of_every_field_round_trips() -> None:
    rng = random.Random(0)
    for name, bits in FIELDS.items():
        for value in range(1 << bits):
            for _ in range(8):
                control = dataclasses.replace(_random_control(rng), **{name: value})
                high = rng.getrandbits(64)
                word = encode(control, high)
                assert decode(word) == control
                assert word & ~CONTROL_MASK == high & ~CONTROL_MASK  # bits 0..40 and 62..63 kept
        with pytest.raises(ValueError):
            dataclasses.replace(_random_control(rng), **{name: 1 << bits})
        with pytest.raises(ValueError):
            dataclasses.replace(_random_control(rng), **{name: -1})


def test_control_bits_round_trip_exhaustively_below_reuse() -> None:
    """All 2^17 values of bits 41..57 (stall, yield, barriers, wait mask), each with random reuse and other bits."""
    rng = random.Random(1)
    for value in range(1 << 17):
        high = (value << 41) | (rng.randrange(16) << 58) | (rng.getrandbits(41)) | (rng.randrange(4) << 62)
        assert encode(decode(high), high) == high


def test_field_positions() -> None:
    assert decode(0x000FE20000000000) == Control(1, False, 7, 7, 0, 0)  # an FFMA: S01, no yield, no barriers
    assert decode(0x000FC20000000000).yield_ is True  # bit 45 clear: the yield
    assert decode(0x0800000000000000).reuse == 0b0010  # DeepGEMM's reuse mask: slot b
    assert decode(0x0000200000000000) == Control(0, False, 0, 0, 0, 0)  # DeepGEMM's yield mask: bit 45
    assert decode(0x0010000000000000).wait_mask == 1 and decode(0x0002000000000000).read_barrier == 1
    assert decode(0x0000400000000000).write_barrier == 1 and decode(0x0000020000000000).stall == 1
    assert CONTROL_MASK == 0x3FFFFE0000000000 and REUSE_MASK == 0x3C00000000000000


# --- synthetic runs ----------------------------------------------------------------------------------------------

FFMA_HIGH = 0x000FE20000000000  # S01, no yield, no barriers (the c operand's register number is ORed in)


def _ffma(address: int, i: int, reuse: bool, acc_base: int = 24) -> Instruction:
    high = encode(Control(1, False, 7, 7, 0, 0b0010 if reuse else 0), FFMA_HIGH | (100 + i))
    text = f"R{100 + i}, R{acc_base + i}, R8{'.reuse' if reuse else ''}, R{100 + i}"
    return Instruction("k", address, "", "FFMA", text, 0x0000000800007223 | (acc_base + i) << 24, high)


def _listing(reuse_pattern: list[bool], acc_base: int = 24) -> list[Instruction]:
    qgmma = Instruction("k", 0, "", "QGMMA.64x128x32.F32.E4M3.E4M3", "R24, gdesc[UR8], R24, gsb0", 0x79F3,
                        0x000FE20008000818)  # writes R24..R87
    depbar = Instruction("k", 16, "", "WARPGROUP.DEPBAR.LE", "gsb0, 0x0", 0x79C5, 0x000FE40000010000)
    ffmas = [_ffma(32 + 16 * i, i, r, acc_base) for i, r in enumerate(reuse_pattern)]
    exit_ = Instruction("k", 32 + 16 * len(ffmas), "", "EXIT", "", 0x794D, 0x000FEA0003800000)
    return [qgmma, depbar, *ffmas, exit_]


def _yields(instructions: list[Instruction]) -> list[int]:
    return [i for i, ins in enumerate(instructions) if ins.base_opcode == "FFMA" and decode(ins.high).yield_]


def test_interleave_yields_every_second_ffma_of_a_reusing_run_and_reuse_clears_them() -> None:
    listing = _listing([True] * 32)
    patches = sass_interleave_ffma.run(listing)
    head = math.ceil(32 * 9 / 16)
    assert [(p.address - 32) // 16 for p in patches] == list(range(1, head, 2))  # FFMA 1, 3, ... 17
    after = patch.patched(listing, patches)
    assert len(sass_register_reuse.incoherent(after)) == len(patches)
    cleared = patch.patched(after, sass_register_reuse.run(after))
    assert sass_register_reuse.incoherent(cleared) == []
    assert all(decode(i.high).reuse == 0 for i in cleared if decode(i.high).yield_)
    assert sum(decode(i.high).reuse != 0 for i in cleared) == 32 - len(patches)  # the other reuse flags stay


def test_interleave_prefers_ffmas_that_read_the_reuse_cache() -> None:
    listing = _listing([False, True] * 12)  # ptxas 13.0's m64n112 pattern: .reuse on every second FFMA
    after = patch.patched(listing, sass_interleave_ffma.run(listing))
    assert all(not decode(after[i].high).reuse for i in _yields(after))  # no reuse flag needs clearing
    assert sass_register_reuse.run(after) == []
    assert len(_yields(after)) == 6  # FFMAs 2, 4, ..., 12 of the first 14 (9/16 of 24)


def test_interleave_leaves_short_runs_and_non_promotion_ffmas_alone() -> None:
    assert sass_interleave_ffma.run(_listing([True] * 15)) == []  # shorter than 16
    assert sass_interleave_ffma.run(_listing([True] * 32, acc_base=150)) == []  # does not read a wgmma accumulator
    already = _listing([True] * 32)
    already = [dataclasses.replace(i, high=encode(dataclasses.replace(decode(i.high), yield_=True, reuse=0), i.high))
               if i.base_opcode == "FFMA" else i for i in already]
    assert sass_interleave_ffma.run(already) == []  # every FFMA yields already


# --- patching and verification -------------------------------------------------------------------------------

def test_patch_refuses_non_control_bits_and_wrong_old_words(built: dict[str, BuiltKernel]) -> None:
    with pytest.raises(patch.SassPatchError, match="outside the control bits"):
        patch.Patch("k", 0, 0x1, 0x0)
    with pytest.raises(patch.SassPatchError, match="multiple of 16"):
        patch.Patch("k", 8, 0, 0)
    kernel = built["m64n112"]
    cubin = (kernel.folder / "kernel.unpatched.cubin").read_bytes()
    first = parse((kernel.folder / "kernel.unpatched.sass").read_text())[0]
    flip = first.high ^ (1 << 45)
    with pytest.raises(patch.SassPatchError, match="expected"):
        patch.apply(cubin, [patch.Patch(first.function, first.address, first.high, flip)])
    with pytest.raises(patch.SassPatchError, match="no .text.nope"):
        patch.apply(cubin, [patch.Patch("nope", 0, flip, first.high)])
    with pytest.raises(patch.SassPatchError, match="two patches"):
        patch.apply(cubin, [patch.Patch(first.function, 0, flip, first.high)] * 2)


def test_verify_rejects_a_corrupted_low_word(built: dict[str, BuiltKernel], tmp_path: Path) -> None:
    kernel = built["m64n112"]
    before_sass = (kernel.folder / "kernel.unpatched.sass").read_text()
    cubin = bytearray((kernel.folder / "kernel.unpatched.cubin").read_bytes())
    ffma = next(i for i in parse(before_sass) if i.base_opcode == "FFMA")
    offset, _ = patch.text_sections(bytes(cubin))[ffma.function]
    (low,) = struct.unpack_from("<Q", cubin, offset + ffma.address)
    struct.pack_into("<Q", cubin, offset + ffma.address, low ^ (1 << 16))  # the destination register's low bit
    (tmp_path / "bad.cubin").write_bytes(cubin)
    with pytest.raises(patch.SassPatchError, match=f"{ffma.address:#06x}"):
        patch.verify(before_sass, disasm.sass(tmp_path / "bad.cubin"))
    # The same listing with only the printed low word changed (text identical): the low-word check itself.
    line = f"{ffma.low:#018x}"
    with pytest.raises(patch.SassPatchError, match="low word"):
        patch.verify(before_sass, before_sass.replace(line, f"{ffma.low ^ 1:#018x}", 1))
    # A high word changed outside the control bits.
    high = f"{ffma.high:#018x}"
    with pytest.raises(patch.SassPatchError, match="non-control"):
        patch.verify(before_sass, before_sass.replace(high, f"{ffma.high ^ 1:#018x}", 1))
    assert patch.verify(before_sass, before_sass) == 0


# --- the build stage on real kernels -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuiltKernel]:
    settings = Settings(tmp_path_factory.mktemp("sass-passes"), True, False, True, sass_passes=BOTH)
    return {name: build(GemmProblem(*shape), CONFIGS.get(name), settings=settings) for name, shape in SHAPES.items()}


def test_listing_reuse_markers_match_the_reuse_bits(built: dict[str, BuiltKernel]) -> None:
    """nvdisasm's `.reuse` markers are bits 58..61 (FFMA: text operand i is bit i-1), and ptxas never sets one on an
    instruction that may yield: what the passes rely on."""
    for kernel in built.values():
        instructions = parse((kernel.folder / "kernel.unpatched.sass").read_text())
        assert sass_register_reuse.incoherent(instructions) == []
        for ins in instructions:
            assert (".reuse" in ins.operands) == bool(ins.high & REUSE_MASK), ins
            if ins.base_opcode == "FFMA":
                marked = sum(1 << (i - 1) for i, op in enumerate(ins.operands.split(",")) if ".reuse" in op)
                assert marked == decode(ins.high).reuse, ins


@pytest.mark.parametrize("name", list(SHAPES))
def test_patched_build_changes_only_control_bits(built: dict[str, BuiltKernel], name: str) -> None:
    kernel = built[name]
    folder = kernel.folder
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["sass_passes"]["enabled"] == list(BOTH) and set(meta["sass_passes"]["patches"]) == set(BOTH)
    counts = meta["sass_passes"]["patches"]
    before, after = (folder / "kernel.unpatched.cubin").read_bytes(), (folder / "kernel.cubin").read_bytes()
    assert len(before) == len(after) and (before != after) == (counts["interleave_ffma"] > 0)
    # Every changed byte lies in the high word of an instruction of a .text section, inside bits 41..61.
    sections = list(patch.text_sections(before).values())
    words = set()
    for i in (i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a):
        offset = next((o for o, size in sections if o <= i < o + size), None)
        assert offset is not None and (i - offset) % 16 >= 8, f"byte {i:#x} changed outside the high words"
        words.add(i - (i - offset) % 16 + 8)
    for at in words:
        (old,), (new,) = struct.unpack_from("<Q", before, at), struct.unpack_from("<Q", after, at)
        assert (old ^ new) & ~CONTROL_MASK == 0
    # The patched cubin disassembles again, to the listing kept, which verifies against the unpatched one.
    fresh = disasm.sass(folder / "kernel.cubin")
    assert fresh == (folder / "kernel.sass").read_text()
    changed = patch.verify((folder / "kernel.unpatched.sass").read_text(), fresh)
    assert changed == len(words)
    assert counts["interleave_ffma"] <= changed <= counts["interleave_ffma"] + counts["register_reuse"]
    # The result: no reuse flag on a yield, and in the first 9/16 of every promotion run at most two FFMAs in a row
    # without a yield.
    instructions = parse(fresh)
    assert sass_register_reuse.incoherent(instructions) == []
    for run in sass_interleave_ffma.promotion_runs(instructions):
        streak = 0
        for index in run[:math.ceil(len(run) * 9 / 16)]:
            streak = 0 if decode(instructions[index].high).yield_ else streak + 1
            assert streak <= 2, f"{name}: FFMA run at {instructions[run[0]].address:#x}"


def test_patch_counts_per_kernel(built: dict[str, BuiltKernel]) -> None:
    counts = {name: k.meta["sass_passes"]["patches"] for name, k in built.items()}
    assert counts["m64n112"]["interleave_ffma"] > 0, counts  # the run without yields got them
    assert counts["m64n128"]["interleave_ffma"] > 0 and counts["m64n128"]["register_reuse"] > 0, counts
    assert sum(c["register_reuse"] for c in counts.values()) <= sum(c["interleave_ffma"] for c in counts.values())


def test_unpatched_build_is_another_cache_entry(built: dict[str, BuiltKernel], settings: Settings) -> None:
    patched = built["m64n112"]
    plain = build(GemmProblem(*SHAPES["m64n112"]), CONFIGS["m64n112"],
                  settings=dataclasses.replace(settings, sass_passes=()))
    assert plain.meta["cache_key"] != patched.meta["cache_key"] and plain.folder != patched.folder
    assert plain.meta["sass_passes"] == {"enabled": [], "patches": {}}
    assert not (plain.folder / "kernel.unpatched.cubin").exists()
    # NVRTC is deterministic: the patched entry kept exactly the cubin that the unpatched build serves.
    assert (patched.folder / "kernel.unpatched.cubin").read_bytes() == plain.cubin != patched.cubin
    patched_settings = dataclasses.replace(settings, cache_dir=patched.folder.parent, sass_passes=BOTH)
    again = build(GemmProblem(*SHAPES["m64n112"]), CONFIGS["m64n112"], settings=patched_settings)
    assert again.from_cache and again.folder == patched.folder


def test_missing_disassembler_names_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def missing(name: str) -> str:
        raise ToolNotFoundError(f"{name} not found")

    monkeypatch.setattr(disasm, "find_tool", missing)
    settings = Settings(tmp_path, False, False, False, sass_passes=BOTH)
    with pytest.raises(ToolNotFoundError, match="GEMMGEN_SASS_PASSES=interleave_ffma,register_reuse"):
        build(GemmProblem(*SHAPES["m64n112"]), settings=settings)


# --- settings, defaults, cache key ---------------------------------------------------------------------------

def test_settings_and_pass_resolution() -> None:
    assert Settings.from_env({}).sass_passes is None
    assert Settings.from_env({"GEMMGEN_SASS_PASSES": "default"}).sass_passes is None
    assert Settings.from_env({"GEMMGEN_SASS_PASSES": "none"}).sass_passes == ()
    assert Settings.from_env({"GEMMGEN_SASS_PASSES": " register_reuse, interleave_ffma "}).sass_passes == (
        "register_reuse", "interleave_ffma")
    for bad in ("none,register_reuse", "interleave_ffma,,register_reuse"):
        with pytest.raises(ValueError, match="GEMMGEN_SASS_PASSES"):
            Settings.from_env({"GEMMGEN_SASS_PASSES": bad})
    assert resolve_sass_passes(("register_reuse", "interleave_ffma"), (13, 0)) == BOTH  # pipeline order
    assert resolve_sass_passes(None, (13, 0)) == default_sass_passes((13, 0)) == ()
    assert resolve_sass_passes((), (13, 0)) == ()
    with pytest.raises(GemmgenError, match="unknown SASS pass"):
        resolve_sass_passes(("interleave",), (13, 0))
    with pytest.raises(GemmgenError, match="needs register_reuse"):
        resolve_sass_passes(("interleave_ffma",), (13, 0))


def test_cache_key_covers_the_passes() -> None:
    plain = cache_key("src", (13, 0), ("-o",), "0.1.0")
    assert cache_key("src", (13, 0), ("-o",), "0.1.0", ()) == plain  # no passes: the key of before
    assert len({plain, cache_key("src", (13, 0), ("-o",), "0.1.0", BOTH),
                cache_key("src", (13, 0), ("-o",), "0.1.0", ("register_reuse",))}) == 3
