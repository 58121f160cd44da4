"""gemmgen.sass.parse on a literal `cuobjdump -sass` excerpt (two functions, predicated and bare instructions)."""

from __future__ import annotations

from gemmgen.sass.parse import Instruction, grep, opcode_counts, parse

LISTING = """
\tcode for sm_90a
\t.target\tsm_90a

\t\tFunction : kern_a
\t.headerflags\t@"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                      /* 0x00000a00ff017b82 */
                                                                                               /* 0x000fe20000000800 */
        /*0170*/                   UTMACCTL.PF [UR12] ;                                         /* 0x000000000c0079b9 */
                                                                                           /* 0x000fe20008000000 */
        /*0180*/                @!P0 MEMBAR.ALL.CTA ;                                          /* 0x0000000000008992 */
                                                                                               /* 0x000fec0000000000 */
        /*0190*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0 ;  /* 0x03e00000081879f3 */
                                                                                               /* 0x000fe20008000818 */
        /*01a0*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR12], R24, gsb0 ; /* 0x03e000000c1879f3 */
                                                                                               /* 0x000fe20008000818 */
        /*01b0*/                   EXIT ;                                                      /* 0x000000000000794d */
                                                                                               /* 0x000fea0003800000 */
\t\t..........

\t\tFunction : kern_b
        /*0000*/               @P0 BRA 0x330 ;                                                 /* 0x0000000000b00947 */
                                                                                               /* 0x000fea0003800000 */
        /*0010*/                   FFMA R2, R3, R4, R2 ;                                       /* 0x0000000403027223 */
                                                                                               /* 0x004fca0000000002 */
"""


def test_parse_instructions() -> None:
    instrs = parse(LISTING)
    assert [i.opcode for i in instrs] == ["LDC", "UTMACCTL.PF", "MEMBAR.ALL.CTA", "QGMMA.64x128x32.F32.E4M3.E4M3",
                                          "QGMMA.64x128x32.F32.E4M3.E4M3", "EXIT", "BRA", "FFMA"]
    assert [i.function for i in instrs] == ["kern_a"] * 6 + ["kern_b"] * 2
    assert [i.address for i in instrs] == [0x0, 0x170, 0x180, 0x190, 0x1A0, 0x1B0, 0x0, 0x10]


def test_words_and_operands() -> None:
    tma = parse(LISTING)[1]
    assert tma == Instruction("kern_a", 0x170, "", "UTMACCTL.PF", "[UR12]", 0x000000000C0079B9, 0x000FE20008000000)
    assert tma.base_opcode == "UTMACCTL"
    qgmma = parse(LISTING)[3]
    assert qgmma.operands == "R24, gdesc[UR8], R24, gsb0"
    assert (qgmma.low, qgmma.high) == (0x03E00000081879F3, 0x000FE20008000818)
    exit_ = parse(LISTING)[5]
    assert (exit_.opcode, exit_.operands, exit_.predicate) == ("EXIT", "", "")


def test_predicates() -> None:
    instrs = parse(LISTING)
    membar, bra = instrs[2], instrs[6]
    assert (membar.predicate, membar.opcode, membar.operands) == ("@!P0", "MEMBAR.ALL.CTA", "")
    assert (membar.low, membar.high) == (0x0000000000008992, 0x000FEC0000000000)
    assert (bra.predicate, bra.opcode, bra.operands) == ("@P0", "BRA", "0x330")
    assert [i.predicate for i in instrs].count("") == 6


def test_opcode_counts() -> None:
    counts = opcode_counts(parse(LISTING))
    assert counts == {"LDC": 1, "UTMACCTL": 1, "MEMBAR": 1, "QGMMA": 2, "EXIT": 1, "BRA": 1, "FFMA": 1}
    assert counts["LDL"] == 0  # a Counter: absent opcodes count 0


def test_high_word_without_instruction_is_ignored() -> None:
    orphan = "   /* 0x000fe20000000800 */\n" + LISTING
    assert parse(orphan) == parse(LISTING)
    assert parse("") == [] and parse("Function : f\n") == []


def test_grep() -> None:
    hits = grep(LISTING, r"QGMMA\.64x128")
    assert len(hits) == 2 and all("gdesc[UR" in h for h in hits) and hits[0].endswith("/* 0x03e00000081879f3 */")
    assert grep(LISTING, r"@!P\d MEMBAR") == [line.rstrip() for line in LISTING.splitlines() if "MEMBAR" in line]
    assert grep(LISTING, "Function : ") == ["\t\tFunction : kern_a", "\t\tFunction : kern_b"]
    assert grep(LISTING, "qgmma") == []  # case-sensitive


NVDISASM = """\t.section\t.text.kern,"ax",@progbits
        .global         kern
        .type           kern,@function
kern:
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                       /* 0x00000a00ff017b82 */
                                                                                                /* 0x000fe20000000800 */
        /*0030*/                   BSSY B0, `(.L_x_0) ;                                         /* 0x0000029000007945 */
                                                                                                /* 0x000fe20003800000 */
"""


def test_nvdisasm_listing() -> None:
    """`nvdisasm -c -hex` (what builds use) names the function in its .type line and labels branch targets."""
    instrs = parse(NVDISASM)
    assert [(i.function, i.address, i.opcode) for i in instrs] == [("kern", 0, "LDC"), ("kern", 0x30, "BSSY")]
    assert instrs[1].operands == "B0, `(.L_x_0)" and instrs[0].high == 0x000FE20000000800


def _waits_listing(waits: list[str], mma_per_wait: int) -> list[Instruction]:
    out: list[Instruction] = []
    for n, wait in enumerate(waits):
        out += [Instruction("k", 32 * n + j, "", "QGMMA.64x96x32.F32.E4M3.E4M3", "R24, gdesc[UR8], R24, gsb0", 0, 0)
                for j in range(mma_per_wait)]
        out.append(Instruction("k", 32 * n + 16, "", "WARPGROUP.DEPBAR.LE", wait, 0, 0))
    return out


def test_wgmma_waits_tells_a_pipelined_kernel_from_a_serialized_one() -> None:
    from gemmgen.sass.parse import wgmma_waits

    # two sets: a group kept in flight through each promotion, one full wait at the loop's exit
    piped = wgmma_waits(_waits_listing(["gsb0, 0x1"] * 8 + ["gsb0, 0x0"], 4))
    assert (piped.mma, piped.in_flight, piped.full) == (36, 8, 1)
    assert not piped.serialized
    # what ptxas emitted for two sets with one main loop per B-scale split place: a full wait after every QGMMA
    serial = wgmma_waits(_waits_listing(["gsb0, 0x0"] * 72, 1))
    assert (serial.mma, serial.in_flight, serial.full) == (72, 0, 72)
    assert serial.serialized
    # one set: one full wait per group of four is the design, not serialization; nor a short two-set tile's branched
    # last-step waits (9 full waits for 36 QGMMA); one per two instructions is
    assert not wgmma_waits(_waits_listing(["gsb0, 0x0"] * 8, 4)).serialized
    assert not wgmma_waits(_waits_listing(["gsb0, 0x0"] * 9, 4)).serialized
    assert wgmma_waits(_waits_listing(["gsb0, 0x0"] * 12, 1)).serialized
