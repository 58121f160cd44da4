"""The two driver calls on the per-launch path, through ctypes straight into libcuda (docs/CONVENTIONS.md #12).

cuda.bindings converts every argument of every call (measured on the H200: cuLaunchKernelEx 4.1 us a call, a
cuTensorMapEncodeTiled ~4 us), more than a decode GEMM's whole kernel. Here both take prebuilt ctypes arguments:
the launch config is a struct built once per (grid, stream), the tensor map is encoded straight into the kernel's
parameter block. Struct layouts: CUDA driver API, cuda.h (`CUlaunchConfig`, `CUlaunchAttribute`, whose value is a
64-byte union at offset 8). Enum values are read from cuda.bindings, not written down here.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from .driver import _driver

c_uint, c_void_p, c_uint64, c_uint32 = ctypes.c_uint, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32


class LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_int), ("value", c_uint64 * 8)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", c_uint), ("gridDimY", c_uint), ("gridDimZ", c_uint), ("blockDimX", c_uint),
                ("blockDimY", c_uint), ("blockDimZ", c_uint), ("sharedMemBytes", c_uint), ("hStream", c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", c_uint)]


@functools.cache
def lib() -> Any:
    """libcuda with argument types set on the two hot entry points (the library cuda.bindings also loads)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuLaunchKernelEx.argtypes = [ctypes.POINTER(LaunchConfig), c_void_p, c_void_p, c_void_p]
    cuda.cuLaunchKernelEx.restype = ctypes.c_int
    cuda.cuTensorMapEncodeTiled.argtypes = [c_void_p, ctypes.c_int, c_uint32, c_void_p, ctypes.POINTER(c_uint64),
                                            ctypes.POINTER(c_uint64), ctypes.POINTER(c_uint32),
                                            ctypes.POINTER(c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                            ctypes.c_int]
    cuda.cuTensorMapEncodeTiled.restype = ctypes.c_int
    return cuda


@functools.cache
def enums() -> dict[str, int]:
    drv = _driver()
    return {
        "u8": int(drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8),
        "f32": int(drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32),
        "bf16": int(drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16),
        "swizzle0": int(drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE),
        "swizzle32": int(drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B),
        "swizzle64": int(drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B),
        "swizzle128": int(drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B),
        "interleave_none": int(drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE),
        "l2_256b": int(drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B),
        "oob_none": int(drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cluster_attr": int(drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION),
        "pdl_attr": int(drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION),
    }


class MapEncoder:
    """One 2-D tiled tensor map's fixed arguments (dtype, box, swizzle) as ctypes values; `encode` writes the map
    for an address and sizes into 128 bytes at `dst` (64-byte aligned)."""

    def __init__(self, dtype: str, box: tuple[int, int], swizzle: int):
        e = enums()
        self.dtype, self.swizzle = e[dtype], e[f"swizzle{swizzle}"]
        self.box = (c_uint32 * 2)(*box)
        self.elem = (c_uint32 * 2)(1, 1)
        self.fixed = (e["interleave_none"], self.swizzle, e["l2_256b"], e["oob_none"])

    @staticmethod
    def sizes(inner: int, outer: int, row_stride: int) -> tuple[Any, Any]:
        return (c_uint64 * 2)(inner, outer), (c_uint64 * 1)(row_stride)

    def encode(self, dst: int, address: int, sizes: tuple[Any, Any]) -> int:
        return lib().cuTensorMapEncodeTiled(dst, self.dtype, 2, address, sizes[0], sizes[1], self.box, self.elem,
                                            *self.fixed)


# 16-byte aligned global addresses the driver encodes while a template is learned (it does not dereference them).
ADDRESS_PROBES = (0x7F00_0000_0000, 0x7F12_3456_7890, 0x7E00_DEAD_BEE0, 0x0000_1000_0010)


class MapTemplate:
    """A tensor map for fixed sizes whose global address is written in place instead of re-encoded: measured on
    the H200, cuTensorMapEncodeTiled costs ~3.6 us of driver time per map, and activations and outputs arrive at
    new addresses on every call of a real model.

    CUtensorMap is opaque (cuda.h), so nothing about its layout is assumed: the template is learned from the
    driver itself — four encodes at probe addresses must differ only in one 64-bit word that holds the address
    (as is, or shifted right by 4) — and then checked byte for byte against the driver's own encode at a further
    address. If any of that does not hold (another driver, another layout), `ok` is False and the caller encodes
    through the driver as before.
    """

    def __init__(self, encoder: MapEncoder, sizes: tuple[Any, Any]):
        self.ok = False
        self.bytes = ctypes.create_string_buffer(128 + 64)
        self._base = (ctypes.addressof(self.bytes) + 63) // 64 * 64
        encoded = [self._encode(encoder, a, sizes) for a in ADDRESS_PROBES]
        maps = [m for m in encoded if m is not None]
        if len(maps) != len(encoded):
            return
        words = [[int.from_bytes(m[i:i + 8], "little") for i in range(0, 128, 8)] for m in maps]
        varying = [w for w in range(16) if len({ws[w] for ws in words}) > 1]
        if len(varying) != 1:
            return
        self.word = varying[0]
        for shift in (0, 4):
            if all(ws[self.word] == a >> shift for ws, a in zip(words, ADDRESS_PROBES, strict=True)):
                self.shift = shift
                break
        else:
            return
        ctypes.memmove(self._base, maps[0], 128)
        check_address = 0x7ABC_0000_1230
        expected = self._encode(encoder, check_address, sizes)
        scratch = ctypes.create_string_buffer(128 + 64)
        dst = (ctypes.addressof(scratch) + 63) // 64 * 64
        self.ok = True
        self.write(dst, check_address)
        self.ok = expected is not None and ctypes.string_at(dst, 128) == expected

    @staticmethod
    def _encode(encoder: MapEncoder, address: int, sizes: tuple[Any, Any]) -> bytes | None:
        scratch = ctypes.create_string_buffer(128 + 64)
        dst = (ctypes.addressof(scratch) + 63) // 64 * 64
        return None if encoder.encode(dst, address, sizes) else ctypes.string_at(dst, 128)

    def write(self, dst: int, address: int) -> None:
        """The map for `address` at `dst` (64-byte aligned): the template, then the address word."""
        ctypes.memmove(dst, self._base, 128)
        self.set_address(dst, address)

    def address_word(self, dst: int) -> tuple[Any, int]:
        """The map at `dst`'s address word (a ctypes view, kept by a caller that rewrites it often) and the shift
        the address is stored with."""
        return ctypes.c_uint64.from_address(dst + 8 * self.word), self.shift

    def set_address(self, dst: int, address: int) -> None:
        view, shift = self.address_word(dst)
        view.value = address >> shift


def launch_config(grid: int, threads: int, smem: int, stream: int, cluster: int, pdl: bool = False) -> LaunchConfig:
    """`cluster` > 1: the cluster-dimension attribute; `pdl`: programmatic stream serialization allowed (the kernel
    may start before the previous kernel in the stream ends; it waits itself with griddepcontrol.wait)."""
    cfg = LaunchConfig(grid, 1, 1, threads, 1, 1, smem, stream, None, 0)
    attrs = (LaunchAttribute * 2)()
    count = 0
    if cluster > 1:
        attrs[count].id = enums()["cluster_attr"]
        attrs[count].value[0] = cluster | (1 << 32)  # clusterDim {x = cluster, y = 1}
        attrs[count].value[1] = 1  # z = 1
        count += 1
    if pdl:
        attrs[count].id = enums()["pdl_attr"]
        attrs[count].value[0] = 1  # programmaticStreamSerializationAllowed (an int at the union's start)
        count += 1
    if count:
        cfg._attrs = attrs  # keep them alive with the config  # type: ignore[attr-defined]
        cfg.attrs = ctypes.cast(attrs, ctypes.POINTER(LaunchAttribute))
        cfg.numAttrs = count
    return cfg


def error_text(code: int) -> str:
    drv = _driver()
    try:
        err = drv.CUresult(code)
        _, name = drv.cuGetErrorName(err)
        return f"{name.decode() if name else code}"
    except Exception:  # noqa: BLE001 - an unknown code is still reported by number
        return str(code)
