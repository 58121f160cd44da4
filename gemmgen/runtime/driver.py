"""The CUDA driver API through cuda.bindings: availability, context, module loading (the per-launch calls, tensor
maps and the launch itself, go through ctypes: runtime/cdriver.py)."""

from __future__ import annotations

import functools
from typing import Any

from ..errors import NoGpuError


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def check(result: Any, what: str) -> Any:
    """Unwrap a cuda.bindings (err, *values) tuple; raise RuntimeError naming the call on failure."""
    drv = _driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        _, text = drv.cuGetErrorString(err)
        raise RuntimeError(f"{what} failed: {name.decode() if name else err} ({text.decode() if text else ''})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """True when the driver initialises and sees a device. Never raises (cuInit raises without libcuda)."""
    try:
        drv = _driver()
        (err,) = drv.cuInit(0)
        if err != drv.CUresult.CUDA_SUCCESS:
            return False
        err, count = drv.cuDeviceGetCount()
        return err == drv.CUresult.CUDA_SUCCESS and count > 0
    except Exception:  # noqa: BLE001 - any failure here means "no usable GPU"
        return False


def require_gpu() -> None:
    if not gpu_available():
        raise NoGpuError("no CUDA GPU is available: gemmgen can build kernels here (gemmgen build) but launching "
                         "one needs an sm_90a GPU and its driver")


@functools.cache
def primary_context(device_index: int) -> Any:
    drv = _driver()
    dev = check(drv.cuDeviceGet(device_index), "cuDeviceGet")
    return check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")


def make_current(device_index: int) -> None:
    """Make torch's (primary) context of `device_index` current on this thread."""
    check(_driver().cuCtxSetCurrent(primary_context(device_index)), "cuCtxSetCurrent")


def device_sm_count(device_index: int) -> int:
    drv = _driver()
    # cuInit is idempotent; without it a query made before torch touched CUDA fails with CUDA_ERROR_NOT_INITIALIZED
    # (seen: bench/sweep_family.py asked for the device's target first thing).
    check(drv.cuInit(0), "cuInit")
    dev = check(drv.cuDeviceGet(device_index), "cuDeviceGet")
    attr = drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    return int(check(drv.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute"))


def device_name(device_index: int) -> str:
    drv = _driver()
    check(drv.cuInit(0), "cuInit")
    dev = check(drv.cuDeviceGet(device_index), "cuDeviceGet")
    raw = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
    return raw.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw)


def load_function(cubin: bytes, name: str, dynamic_smem: int) -> Any:
    drv = _driver()
    module = check(drv.cuModuleLoadData(cubin), "cuModuleLoadData")
    func = check(drv.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name})")
    attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check(drv.cuFuncSetAttribute(func, attr, dynamic_smem), "cuFuncSetAttribute(max dynamic smem)")
    return module, func
