"""The tensor-map template (runtime/cdriver.MapTemplate) learns where the driver keeps the global address and is
used only when its patch reproduces the driver's encode byte for byte: checked here against stand-in encoders."""

from __future__ import annotations

import ctypes

from gemmgen.runtime import cdriver


class _FakeEncoder:
    """Writes a 128-byte 'map': fixed noise, the sizes, and the address at `word`, shifted; `scatter` also mixes
    address bits into another word (a layout the template must refuse)."""

    def __init__(self, word: int, shift: int, scatter: bool = False):
        self.word, self.shift, self.scatter, self.calls = word, shift, scatter, 0

    def encode(self, dst: int, address: int, sizes) -> int:
        self.calls += 1
        words = [(0x1111_2222_3333_0000 + i) for i in range(16)]
        words[5] = sizes[0][0] | (sizes[0][1] << 32)
        words[self.word] = address >> self.shift
        if self.scatter:
            words[7] ^= address & 0xFFFF0
        ctypes.memmove(dst, b"".join(w.to_bytes(8, "little") for w in words), 128)
        return 0


def _map_bytes(fill) -> bytes:
    buf = ctypes.create_string_buffer(256)
    dst = (ctypes.addressof(buf) + 63) // 64 * 64
    fill(dst)
    return ctypes.string_at(dst, 128)


def test_template_learns_the_address_word_and_matches_the_driver() -> None:
    sizes = cdriver.MapEncoder.sizes(7168, 64, 7168)
    for word, shift in ((0, 0), (2, 4)):
        enc = _FakeEncoder(word, shift)
        template = cdriver.MapTemplate(enc, sizes)  # type: ignore[arg-type]
        assert template.ok and template.word == word and template.shift == shift
        address = 0x7F55_AAAA_0040
        assert _map_bytes(lambda d, t=template, a=address: t.write(d, a)) == _map_bytes(
            lambda d, e=enc, a=address: e.encode(d, a, sizes))


def test_template_refuses_a_layout_it_cannot_reproduce() -> None:
    sizes = cdriver.MapEncoder.sizes(7168, 64, 7168)
    assert not cdriver.MapTemplate(_FakeEncoder(3, 0, scatter=True), sizes).ok  # type: ignore[arg-type]
    assert not cdriver.MapTemplate(_FakeEncoder(3, 8), sizes).ok  # type: ignore[arg-type]  # an unknown shift
