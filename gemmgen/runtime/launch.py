"""Typed launch (docs/CONVENTIONS.md #12): tensor maps, parameter block and grid, all read off the kernel plan."""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from cuda.bindings import driver as drv

from ..errors import GemmgenError
from ..ir import KernelPlan, ParamKind, TmaMapPlan
from . import driver, validate

if TYPE_CHECKING:
    from ..stages import BuiltKernel

# torch.cuda.current_stream(device) builds a Stream object (~3-6 us per call measured on the H200,
# bench/host_overhead.py); the raw handle getter Triton's launcher uses returns a plain int.
_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)

ARGS_CACHE_SIZE = 64  # packed parameter blocks kept per kernel, keyed by (pointers, rows, groups)

# encode(dtype, address, inner, outer, row_stride_bytes, box_inner, box_outer, swizzle) -> a CUtensorMap object
Encoder = Callable[[str, int, int, int, int, int, int, int], Any]


def encode_map(m: TmaMapPlan, address: int, env: Mapping[str, int], encode: Encoder) -> Any:
    """The tensor map `m` describes, for a tensor at `address` and the run-time sizes in `env`."""
    inner, outer = (d.value(env) for d in m.dims)
    return encode(m.dtype, address, inner, outer, m.row_stride.value(env), m.box[0], m.box[1], m.swizzle)


def param_values(plan: KernelPlan, addresses: Mapping[str, int], env: Mapping[str, int],
                 encode: Encoder) -> list[Any]:
    """One value per kernel parameter, in the plan's order: tensor maps, ctypes pointers and ints."""
    values: list[Any] = []
    for p in plan.params:
        if p.kind is ParamKind.TMAP:
            values.append(encode_map(plan.map(p.source), addresses[p.source], env, encode))
        elif p.kind is ParamKind.POINTER:
            values.append(ctypes.c_void_p(addresses[p.source]))
        else:
            values.append(ctypes.c_int(env[p.source]))
    return values


@dataclass(frozen=True)
class _PackedArgs:
    values: list[Any]  # the tensor maps and ctypes scalars the block points into (kept alive here)
    array: Any  # ctypes void*[n]: one pointer per kernel parameter
    address: int


class Launcher:
    """Loads the cubin once per device and launches it on torch's current stream."""

    def __init__(self, built: BuiltKernel):
        assert built.kernel.plan is not None
        self.built = built
        self.plan: KernelPlan = built.kernel.plan
        self._functions: dict[int, Any] = {}
        self._args: OrderedDict[tuple[int, ...], _PackedArgs] = OrderedDict()
        self._configs: dict[tuple[int, int], Any] = {}

    def _function(self, device_index: int) -> Any:
        if device_index not in self._functions:
            driver.require_gpu()
            if torch.cuda.is_current_stream_capturing():
                raise GemmgenError(f"{self.built.name} would be loaded on cuda:{device_index} inside a CUDA graph "
                                   "capture, where loading a module is not allowed: call it once before capturing "
                                   "(a warm-up), then capture")
            driver.make_current(device_index)
            self._functions[device_index] = driver.load_function(
                self.built.cubin, self.built.name, self.plan.launch.dynamic_smem)
        return self._functions[device_index][1]

    def _packed_args(self, tensors: Mapping[str, torch.Tensor], env: Mapping[str, int]) -> int:
        """The kernel's parameter block (`void*[n]`, as cuLaunchKernel takes it) for these pointers and sizes.

        Encoding tensor maps and packing parameters costs far more than a small GEMM, so the packed block is cached
        per (pointers, rows, groups); cuda.bindings then takes its address as is (no per-call conversion).
        """
        addresses = {name: t.data_ptr() for name, t in tensors.items()}
        key = (*addresses.values(), env["m"], env["g"])
        hit = self._args.get(key)
        if hit is not None:
            return hit.address
        values = param_values(self.plan, addresses, env, driver.tensor_map_2d)
        pointers = [v.getPtr() if p.kind is ParamKind.TMAP else ctypes.addressof(v)
                    for p, v in zip(self.plan.params, values, strict=True)]
        array = (ctypes.c_void_p * len(pointers))(*pointers)
        packed = _PackedArgs(values, array, ctypes.addressof(array))
        self._args[key] = packed
        if len(self._args) > ARGS_CACHE_SIZE:
            self._args.popitem(last=False)
        return packed.address

    def _launch_config(self, grid: int, stream: int) -> Any:
        cfg = self._configs.get((grid, stream))
        if cfg is None:
            launch = self.plan.launch
            cfg = drv.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid, 1, 1
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = launch.threads, 1, 1
            cfg.sharedMemBytes = launch.dynamic_smem
            cfg.hStream = drv.CUstream(stream)
            attrs = []
            if launch.cluster > 1:
                attr = drv.CUlaunchAttribute()
                attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
                attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = launch.cluster, 1, 1
                attrs.append(attr)
            cfg.attrs = attrs
            cfg.numAttrs = len(attrs)
            self._configs[(grid, stream)] = cfg
        return cfg

    def __call__(self, *args: Any) -> torch.Tensor:
        """Check the arguments of this kernel's kind (see the public calls in gemmgen.api), then launch."""
        call = validate.CHECKS[self.built.kernel.problem.kind]
        tensors, env = call(*args)
        p = self.built.kernel.problem
        b = tensors["b"]
        if (b.shape[-2], b.shape[-1]) != (p.n, p.k):
            raise ValueError(f"b: this kernel was built for N={p.n}, K={p.k}; got N={b.shape[-2]}, K={b.shape[-1]}")
        return self.launch(tensors, env)

    def launch(self, tensors: Mapping[str, torch.Tensor], env: Mapping[str, int]) -> torch.Tensor:
        """Launch on arguments already checked by `validate` for this kernel's kind, N and K.

        `tensors`: the plan's operands by name ("a", "sa" in the kernel's layout, "b", "sb", "out", and the grouped
        layout's "m_indices" or "masked_m"); `env`: run-time sizes ("m" rows of the per-group view, "g" groups)."""
        out = tensors["out"]
        if env["m"] == 0 or env["g"] == 0:
            return out
        device = out.get_device()
        func = self._function(device)
        params = self._packed_args(tensors, env)
        cfg = self._launch_config(self.plan.launch.grid(env["m"], env["g"]), _current_stream(device))
        driver.check(drv.cuLaunchKernelEx(cfg, func, params, 0), f"cuLaunchKernelEx({self.built.name})")
        return out
