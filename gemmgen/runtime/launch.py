"""Typed launch (STYLE.md #12): grid, block, shared memory, cluster and tensor maps derived from the IR."""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from cuda.bindings import driver as drv

from ..ir import ceil_div
from ..legality import smem_bytes
from ..quant import tma_aligned_rows, tma_aligned_scales
from . import driver, validate

if TYPE_CHECKING:
    from ..stages import BuiltKernel

# torch.cuda.current_stream(device) builds a Stream object (~3-6 us per call measured on the H200,
# bench/host_overhead.py); the raw handle getter Triton's launcher uses returns a plain int.
_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)

ARGS_CACHE_SIZE = 64  # packed parameter blocks kept per kernel, keyed by (pointers, M)


@dataclass(frozen=True)
class _PackedArgs:
    maps: tuple[Any, ...]  # the four CUtensorMap objects the block points into (kept alive here)
    scalars: tuple[Any, ...]  # ctypes values of the SB pointer and M
    array: Any  # ctypes void*[6]: one pointer per kernel parameter
    address: int


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    threads: int
    dynamic_smem: int
    cluster: int
    max_ctas: int  # persistent grid cap (config.num_sms)
    block_m: int
    block_n: int
    block_k: int
    num_n_blocks: int
    d_box_cols: int
    swizzle_ab: int
    swizzle_d: int

    def grid(self, m: int) -> int:
        """One CTA per SM up to the number of tiles, a multiple of the cluster size."""
        tiles = ceil_div(m, self.block_m) * self.num_n_blocks
        ctas = min(self.max_ctas, tiles)
        return ctas // self.cluster * self.cluster


def launch_spec(built: BuiltKernel) -> LaunchSpec:
    c, p = built.config, built.kernel.problem
    assert c.swizzle_ab is not None and c.swizzle_d is not None and c.num_sms is not None
    return LaunchSpec(
        threads=c.num_threads, dynamic_smem=smem_bytes(c), cluster=c.cluster, max_ctas=c.num_sms,
        block_m=c.block_m, block_n=c.block_n, block_k=c.block_k, num_n_blocks=p.n_blocks(c.block_n),
        d_box_cols=c.swizzle_d // 2 if c.swizzle_d else c.block_n, swizzle_ab=c.swizzle_ab, swizzle_d=c.swizzle_d)


class Launcher:
    """Loads the cubin once per device and launches it on torch's current stream."""

    def __init__(self, built: BuiltKernel):
        self.built = built
        self.spec = launch_spec(built)
        self._functions: dict[int, Any] = {}
        self._args: OrderedDict[tuple[int, ...], _PackedArgs] = OrderedDict()
        self._configs: dict[tuple[int, int], Any] = {}

    def _function(self, device_index: int) -> Any:
        if device_index not in self._functions:
            driver.require_gpu()
            driver.make_current(device_index)
            self._functions[device_index] = driver.load_function(
                self.built.cubin, self.built.name, self.spec.dynamic_smem)
        return self._functions[device_index][1]

    def _packed_args(self, a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
                     out: torch.Tensor, m: int) -> int:
        """The kernel's parameter block (`void*[6]`, as cuLaunchKernel takes it) for these pointers and M.

        Encoding four tensor maps and packing parameters costs far more than a small GEMM, so the packed block
        is cached per (pointers, M); cuda.bindings then takes its address as is (no per-call conversion).
        """
        key = (a.data_ptr(), sa.data_ptr(), b.data_ptr(), sb.data_ptr(), out.data_ptr(), m)
        hit = self._args.get(key)
        if hit is not None:
            return hit.address
        s, p = self.spec, self.built.kernel.problem
        n, k, kb = p.n, p.k, p.k_blocks
        maps = (
            driver.tensor_map_2d("u8", key[0], k, m, k, s.block_k, s.block_m, s.swizzle_ab),
            driver.tensor_map_2d("u8", key[2], k, n, k, s.block_k, s.block_n, s.swizzle_ab),
            driver.tensor_map_2d("f32", key[1], m, kb, tma_aligned_rows(m) * 4, s.block_m, 1, 0),
            driver.tensor_map_2d("bf16", key[4], n, m, n * 2, s.d_box_cols, s.block_m, s.swizzle_d),
        )
        scalars = (ctypes.c_void_p(key[3]), ctypes.c_int(m))
        pointers = [tm.getPtr() for tm in maps] + [ctypes.addressof(v) for v in scalars]
        array = (ctypes.c_void_p * len(pointers))(*pointers)
        packed = _PackedArgs(maps, scalars, array, ctypes.addressof(array))
        self._args[key] = packed
        if len(self._args) > ARGS_CACHE_SIZE:
            self._args.popitem(last=False)
        return packed.address

    def _launch_config(self, grid: int, stream: int) -> Any:
        cfg = self._configs.get((grid, stream))
        if cfg is None:
            cfg = drv.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid, 1, 1
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.spec.threads, 1, 1
            cfg.sharedMemBytes = self.spec.dynamic_smem
            cfg.hStream = drv.CUstream(stream)
            attrs = []
            if self.spec.cluster > 1:
                attr = drv.CUlaunchAttribute()
                attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
                attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = self.spec.cluster, 1, 1
                attrs.append(attr)
            cfg.attrs = attrs
            cfg.numAttrs = len(attrs)
            self._configs[(grid, stream)] = cfg
        return cfg

    def __call__(self, a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
                 out: torch.Tensor) -> torch.Tensor:
        validate.check_gemm(a, sa, b, sb, out)
        p = self.built.kernel.problem
        if (b.shape[0], a.shape[1]) != (p.n, p.k):
            raise ValueError(f"b: this kernel was built for N={p.n}, K={p.k}; got N={b.shape[0]}, K={a.shape[1]}")
        return self.launch(a, sa, b, sb, out)

    def launch(self, a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
               out: torch.Tensor) -> torch.Tensor:
        """Launch on arguments already checked by `validate.check_gemm` for this kernel's N and K."""
        m = a.shape[0]
        if m == 0:
            return out
        sa = tma_aligned_scales(sa)  # no copy when already in the kernel's layout
        func = self._function(a.get_device())
        params = self._packed_args(a, sa, b, sb, out, m)
        stream = _current_stream(a.get_device())
        cfg = self._launch_config(self.spec.grid(m), stream)
        driver.check(drv.cuLaunchKernelEx(cfg, func, params, 0), f"cuLaunchKernelEx({self.built.name})")
        return out
