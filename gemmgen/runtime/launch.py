"""Typed launch (STYLE.md #12): grid, block, shared memory, cluster and tensor maps derived from the IR."""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..legality import smem_bytes
from ..quant import tma_aligned_rows, tma_aligned_scales
from . import driver, validate

if TYPE_CHECKING:
    from ..stages import BuiltKernel

TMAP_CACHE_SIZE = 64  # encoded descriptors kept per kernel, keyed by (pointer, shape)


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
        tiles = -(-m // self.block_m) * self.num_n_blocks
        ctas = min(self.max_ctas, tiles)
        return ctas // self.cluster * self.cluster


def launch_spec(built: BuiltKernel) -> LaunchSpec:
    c, p = built.config, built.kernel.problem
    assert c.swizzle_ab is not None and c.swizzle_d is not None and c.num_sms is not None
    return LaunchSpec(
        threads=c.num_threads, dynamic_smem=smem_bytes(c), cluster=c.cluster, max_ctas=c.num_sms,
        block_m=c.block_m, block_n=c.block_n, block_k=c.block_k, num_n_blocks=-(-p.n // c.block_n),
        d_box_cols=c.swizzle_d // 2 if c.swizzle_d else c.block_n, swizzle_ab=c.swizzle_ab, swizzle_d=c.swizzle_d)


class Launcher:
    """Loads the cubin once per device and launches it on torch's current stream."""

    def __init__(self, built: BuiltKernel):
        self.built = built
        self.spec = launch_spec(built)
        self._functions: dict[int, Any] = {}
        self._tmaps: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._configs: dict[tuple[int, int], Any] = {}

    def _function(self, device_index: int) -> Any:
        if device_index not in self._functions:
            driver.require_gpu()
            driver.make_current(device_index)
            self._functions[device_index] = driver.load_function(
                self.built.cubin, self.built.name, self.spec.dynamic_smem)
        return self._functions[device_index][1]

    def _tmap(self, key: tuple[Any, ...], *args: Any) -> Any:
        hit = self._tmaps.get(key)
        if hit is None:
            hit = driver.tensor_map_2d(*args)
            self._tmaps[key] = hit
            if len(self._tmaps) > TMAP_CACHE_SIZE:
                self._tmaps.popitem(last=False)
        return hit

    def _launch_config(self, grid: int, stream: int) -> Any:
        from cuda.bindings import driver as drv

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
        m, k = a.shape
        n = b.shape[0]
        if m == 0:
            return out
        sa = tma_aligned_scales(sa)  # no copy when already in the kernel's layout
        s = self.spec
        func = self._function(a.device.index or 0)
        kb = -(-k // 128)
        t_a = self._tmap(("a", a.data_ptr(), m), "u8", a.data_ptr(), k, m, k, s.block_k, s.block_m, s.swizzle_ab)
        t_b = self._tmap(("b", b.data_ptr(), n), "u8", b.data_ptr(), k, n, k, s.block_k, s.block_n, s.swizzle_ab)
        t_sa = self._tmap(("sa", sa.data_ptr(), m), "f32", sa.data_ptr(), m, kb, tma_aligned_rows(m) * 4,
                          s.block_m, 1, 0)
        t_d = self._tmap(("d", out.data_ptr(), m), "bf16", out.data_ptr(), n, m, n * 2, s.d_box_cols, s.block_m,
                         s.swizzle_d)
        params = ((t_a, t_b, t_sa, t_d, sb.data_ptr(), m),
                  (None, None, None, None, ctypes.c_void_p, ctypes.c_int))
        from cuda.bindings import driver as drv

        stream = torch.cuda.current_stream(a.device).cuda_stream
        cfg = self._launch_config(s.grid(m), stream)
        driver.check(drv.cuLaunchKernelEx(cfg, func, params, 0), f"cuLaunchKernelEx({self.built.name})")
        return out
