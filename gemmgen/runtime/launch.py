"""Typed launch (docs/CONVENTIONS.md #12): tensor maps, parameter block and grid, all read off the kernel plan.

The per-call path is what a decode GEMM's time is made of, so it is kept to: write the new pointers and run-time
ints into one preallocated parameter block per device, rewrite only the tensor maps whose (address, rows, groups)
changed, straight into that block (a new address alone is one 8-byte write into the learned map: MapTemplate), and
launch through ctypes (runtime/cdriver.py) with a config struct built once per (grid, stream). cuLaunchKernelEx
copies the parameters at the call, so the block is reused by the next call.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..errors import GemmgenError
from ..ir import GemmKind, KernelPlan, ParamKind, TmaMapPlan, ceil_div
from . import cdriver, driver, validate
from .validate import INT32_MAX
from .workspace import Workspace, Workspaces, is_capturing

if TYPE_CHECKING:
    from ..stages import BuiltKernel

# torch.cuda.current_stream(device) builds a Stream object (~3-6 us per call measured on the H200,
# bench/host_overhead.py); the raw handle getter Triton's launcher uses returns a plain int.
_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)

@dataclass(frozen=True)
class Slot:
    """Where one kernel parameter lives in the block: CUtensorMap 128 B (64-aligned), pointer 8 B, int 4 B."""

    index: int
    kind: ParamKind
    source: str
    offset: int


_SIZE_ALIGN = {ParamKind.TMAP: (128, 64), ParamKind.POINTER: (8, 8), ParamKind.INT32: (4, 4)}


def block_layout(plan: KernelPlan) -> tuple[list[Slot], int]:
    slots, offset = [], 0
    for i, p in enumerate(plan.params):
        size, align = _SIZE_ALIGN[p.kind]
        offset = ceil_div(offset, align) * align
        slots.append(Slot(i, p.kind, p.source, offset))
        offset += size
    return slots, offset


def map_symbols(m: TmaMapPlan) -> tuple[str, ...]:
    """The run-time symbols a map's sizes are made of (rows, groups, K, the operand's row stride and rows)."""
    return tuple(sorted({*m.dims[0].symbols, *m.dims[1].symbols, *m.row_stride.symbols}))


class MapCache:
    """A kernel's tensor-map sizes and learned templates (cdriver.MapTemplate) per (map, values of its symbols): they
    do not depend on which parameter block is filled, so a launcher's blocks (one per device) share one (learning a
    template costs five driver encodes)."""

    def __init__(self) -> None:
        self._sizes: dict[tuple[int, tuple[int, ...]], tuple[Any, Any]] = {}
        self._templates: dict[tuple[int, tuple[int, ...]], cdriver.MapTemplate] = {}

    def sizes(self, i: int, m: TmaMapPlan, env: Mapping[str, int], values: tuple[int, ...]) -> tuple[Any, Any]:
        key = (i, values)
        sizes = self._sizes.get(key)
        if sizes is None:
            sizes = cdriver.MapEncoder.sizes(m.dims[0].value(env), m.dims[1].value(env), m.row_stride.value(env))
            if len(self._sizes) > 256:
                self._sizes.clear()
            self._sizes[key] = sizes
        return sizes

    def template(self, i: int, encoder: cdriver.MapEncoder, m: TmaMapPlan, env: Mapping[str, int],
                 values: tuple[int, ...]) -> cdriver.MapTemplate:
        key = (i, values)
        template = self._templates.get(key)
        if template is None:
            if len(self._templates) > 64:
                self._templates.clear()
            template = self._templates[key] = cdriver.MapTemplate(encoder, self.sizes(i, m, env, values))
        return template


class ParamBlock:
    """The kernel's parameters in one 64-byte aligned buffer and the `void*[n]` array cuLaunchKernelEx takes."""

    def __init__(self, plan: KernelPlan, maps: MapCache | None = None):
        self.plan = plan
        self.map_cache = maps if maps is not None else MapCache()
        slots, size = block_layout(plan)
        self._raw = ctypes.create_string_buffer(size + 64)
        base = ceil_div(ctypes.addressof(self._raw), 64) * 64
        self.array = (ctypes.c_void_p * len(slots))(*(base + s.offset for s in slots))
        self.array_address = ctypes.addressof(self.array)
        tmaps = [(s, plan.map(s.source)) for s in slots if s.kind is ParamKind.TMAP]
        self.maps = [(s.source, base + s.offset, m, cdriver.MapEncoder(m.dtype, m.box, m.swizzle)) for s, m in tmaps]
        self._symbols = [map_symbols(m) for _s, m in tmaps]
        self.pointers = [(s.source, ctypes.c_uint64.from_address(base + s.offset)) for s in slots
                         if s.kind is ParamKind.POINTER]
        self.ints = [(s.source, ctypes.c_int32.from_address(base + s.offset)) for s in slots
                     if s.kind is ParamKind.INT32]
        self._encoded: list[tuple[int, tuple[int, ...]] | None] = [None] * len(self.maps)
        self._address_words: list[tuple[ctypes.c_uint64, int] | None] = [None] * len(self.maps)

    def forget(self) -> None:
        """The next fill rewrites every map: its words were written by someone else (DenseCall)."""
        self._encoded = [None] * len(self.maps)

    def views(self) -> tuple[dict[str, tuple[ctypes.c_uint64, int] | None], dict[str, Any], dict[str, Any]]:
        """After a fill: each map's address word (None where not written from a template), pointer and int views,
        by source name."""
        return ({m[0]: w for m, w in zip(self.maps, self._address_words, strict=True)}, dict(self.pointers),
                dict(self.ints))

    def fill(self, tensors: Mapping[str, torch.Tensor], env: Mapping[str, int], name: str) -> None:
        for i, (source, dst, m, encoder) in enumerate(self.maps):
            if m.when and not env[m.when]:  # a map the kernel does not read on this call (e.g. SA gathered)
                continue
            address = tensors[source].data_ptr()
            values = tuple([env[s] for s in self._symbols[i]])  # the map's sizes and row stride
            key = (address, values)
            last = self._encoded[i]
            if last == key:
                continue
            self._encoded[i] = None
            word = self._address_words[i]  # (the map's address word, its shift) once written from a template
            if word is not None and last is not None and last[1] == values:
                word[0].value = address >> word[1]  # same sizes, new address: one word of the map (MapTemplate)
            else:
                template = self.map_cache.template(i, encoder, m, env, values)
                self._address_words[i] = None
                if template.ok:  # the driver's map for these sizes, with the new address written in
                    template.write(dst, address)
                    self._address_words[i] = template.address_word(dst)
                else:
                    code = encoder.encode(dst, address, self.map_cache.sizes(i, m, env, values))
                    if code:
                        raise RuntimeError(f"cuTensorMapEncodeTiled({name}, {source}) failed: "
                                           f"{cdriver.error_text(code)}")
            self._encoded[i] = key
        for source, view in self.pointers:
            view.value = tensors[source].data_ptr()
        for source, iview in self.ints:
            iview.value = env[source]


# What DenseCall's plan may hold: these maps and pointers, and ints of which it writes the SA ones per call (M, G and
# SA's group stride are fixed for a DenseCall: the first fill writes them). A split_global kernel adds its workspace
# pointers, written by a full fill whenever the stream changes.
_DENSE_MAPS, _DENSE_POINTERS = ("a", "b", "out", "sa"), ("sa", "sb")
_WORKSPACE_POINTERS = ("ws_counters", "ws_partials")
_DENSE_INTS = ("m", "g", "sa_tma", "sa_stride_m", "sa_stride_k", "sa_stride_g")


class DenseCall:
    """fp8_gemm_nt's common call (validate.fast_dense) on one kernel, M and device, with its own parameter block.

    M is fixed, so every tensor map's sizes are too while the operands' row strides stay: after the first call (a
    full fill from the learned map templates) a call writes five addresses and three ints into the block and
    launches, with no dicts and no per-map bookkeeping. The host target is 10 us per call with new activation and
    output pointers; the general path (Launcher.launch) measured 14.3-19.5 us on the H200's host (bench/NOTES.md
    v0.9). Anything this cannot write as one word (new row strides, a map the driver's layout did not let us learn,
    SA switching to its tensor map before that map was ever written) takes the full fill again. A split-K kernel
    called inside a CUDA-graph capture goes through Launcher.launch (a workspace of the capture's own, per call)."""

    def __init__(self, launcher: Launcher, m: int, device: int):
        if m > launcher._a_rows:
            raise ValueError(f"a: this kernel loads {launcher._a_rows} rows of A per tile, got M={m}")
        self.launcher, self.m, self.device = launcher, m, device
        self.func = launcher._function(device)
        self.block = ParamBlock(launcher.plan, launcher._map_cache)
        self.array_address = self.block.array_address
        self.lock = threading.Lock()
        self.stream: int | None = None
        self.cfg: cdriver.LaunchConfig | None = None
        self.words: tuple[Any, ...] | None = None  # the views a call writes, after the first full fill
        self.strides: tuple[int, ...] = ()  # the row strides of A, B and out the maps were last filled with
        # split_global: this stream's workspace (Launcher.workspaces), written by the full fill after a stream change
        self.workspace: Workspace | None = None
        # the block-scaled dense plan exactly (a changed plan falls back to the full fill on every call)
        b = self.block
        pointers = sorted(_DENSE_POINTERS + (_WORKSPACE_POINTERS if launcher.workspaces else ()))
        self.writable = (sorted(m[0] for m in b.maps) == sorted(_DENSE_MAPS)
                         and sorted(p[0] for p in b.pointers) == pointers
                         and {"sa_tma", "sa_stride_m", "sa_stride_k"} <= {i[0] for i in b.ints} <= set(_DENSE_INTS))

    def _fill(self, fast: validate.FastDense, a: Any, b: Any, out: torch.Tensor) -> None:
        tensors, env = validate.fast_dense_operands(a, b, out, fast)
        if self.workspace is not None:
            tensors = {**tensors, **self.workspace.views}
        if self.words is not None:  # words were written past the block's bookkeeping: rewrite every map
            self.block.forget()
        self.block.fill(tensors, env, self.launcher.built.name)
        maps, pointers, ints = self.block.views()
        self.words = None
        self.strides = fast[12:]
        a_map, b_map, d_map = maps.get("a"), maps.get("b"), maps.get("out")
        if self.writable and a_map is not None and b_map is not None and d_map is not None:
            self.words = (*a_map, *b_map, *d_map, maps.get("sa"), pointers["sa"], pointers["sb"],
                          ints["sa_tma"], ints["sa_stride_m"], ints["sa_stride_k"])

    def __call__(self, fast: validate.FastDense, a: Any, b: Any, out: torch.Tensor) -> torch.Tensor:
        _m, _n, _k, _dev, sm, sk, tma, xp, sap, wp, sbp, op = fast[:12]
        if self.launcher.workspaces is not None and is_capturing():  # a workspace of the capture's own, per call
            return self.launcher.launch(*validate.fast_dense_operands(a, b, out, fast))
        stream = _current_stream(self.device)
        lock = self.lock
        lock.acquire()  # acquire/release around try/finally: half the cost of `with` (~70 ns on the CPU box)
        try:
            if stream != self.stream:
                self.cfg = self.launcher._launch_config(self.m, 1, stream)
                if self.launcher.workspaces:
                    self.workspace = self.launcher.workspaces.get(self.device, stream, self.m, 1)
                    if self.words is not None:  # maps written past the block's bookkeeping: the fill rewrites all
                        self.block.forget()
                    self.words = None  # the full fill below writes the workspace pointers
                self.stream = stream  # last: a failed workspace allocation leaves the next call to try again
            words = self.words
            if words is None or (tma and words[6] is None) or fast[12:] != self.strides:
                self._fill(fast, a, b, out)
            else:
                aw, ash, bw, bsh, dw, dsh, sa_map, sa_ptr, sb_ptr, tma_v, sm_v, sk_v = words
                aw.value = xp >> ash
                bw.value = wp >> bsh
                dw.value = op >> dsh
                if tma:  # else the kernel gathers SA through the pointer and never reads its map
                    sa_map[0].value = sap >> sa_map[1]
                sa_ptr.value = sap
                sb_ptr.value = sbp
                tma_v.value, sm_v.value, sk_v.value = tma, sm, sk
            code = self.launcher._launch_fn(self.cfg, self.func, self.array_address, None)
        finally:
            lock.release()
        if code:
            raise RuntimeError(f"cuLaunchKernelEx({self.launcher.built.name}) failed: {cdriver.error_text(code)}")
        return out


class Launcher:
    """Loads the cubin once per device and launches it on torch's current stream."""

    def __init__(self, built: BuiltKernel):
        assert built.kernel.plan is not None
        self.built = built
        self.plan: KernelPlan = built.kernel.plan
        self._functions: dict[int, int] = {}
        # One parameter block per device: a call rewrites only what changed (an LRU of blocks keyed by the maps'
        # addresses cost more per call building its key than the one address word it saved writing: CPU harness
        # bench/host_python_cpu.py --launch, bench/NOTES.md v0.6).
        self._blocks: dict[int, ParamBlock] = {}
        self._launch_fn: Any = None  # libcuda's cuLaunchKernelEx (cdriver.lib), bound at the first load
        self._configs: dict[tuple[int, int, int], cdriver.LaunchConfig] = {}
        self._lock = threading.Lock()  # blocks are shared: choose, fill and launch as one step
        self._map_cache = MapCache()  # every block of this kernel, on every device, fills maps from these templates
        # split_global: the split-K workspace per (device, stream); None for every other kernel
        self.workspaces = Workspaces(self.plan.launch) if self.plan.launch.partial_floats else None
        # A direct call's argument check and the dtypes this kernel reads and writes (fixed per kernel)
        p = built.kernel.problem
        self._check = validate.checks_for(p)
        self._dtypes = {"a": validate.TORCH_DTYPES[p.a_dtype], "b": validate.TORCH_DTYPES[p.b_dtype],
                        "out": validate.TORCH_OUT_DTYPES[p.out_dtype]}
        # M a launch may have: a_rows where a decode kernel's ring slots hold fewer rows than its tile, else any
        # (or, A and B swapped, the token columns of its tile: LaunchPlan.max_m)
        rows = built.config.load_rows
        self._a_rows = self.plan.launch.max_m or (rows if rows < self.plan.launch.block_m else INT32_MAX)

    def _function(self, device_index: int) -> int:
        func = self._functions.get(device_index)
        if func is None:
            with self._lock:  # one load per device; the blocks exist before the function is published
                func = self._functions.get(device_index)
                if func is None:
                    func = self._load(device_index)
        return func

    def _load(self, device_index: int) -> int:
        driver.require_gpu()
        if torch.cuda.is_current_stream_capturing():
            raise GemmgenError(f"{self.built.name} would be loaded on cuda:{device_index} inside a CUDA graph "
                               "capture, where loading a module is not allowed: call it once before capturing "
                               "(a warm-up), then capture")
        driver.make_current(device_index)
        _module, handle = driver.load_function(self.built.cubin, self.built.name, self.plan.launch.dynamic_smem)
        self._blocks[device_index] = ParamBlock(self.plan, self._map_cache)
        self._launch_fn = cdriver.lib().cuLaunchKernelEx
        self._functions[device_index] = int(handle)
        return int(handle)

    def _launch_config(self, rows: int, groups: int, stream: int) -> cdriver.LaunchConfig:
        """The launch struct for this grid (from the run-time rows and groups) and stream, built once."""
        cfg = self._configs.get((rows, groups, stream))
        if cfg is None:
            la = self.plan.launch
            if len(self._configs) > 1024:
                self._configs.clear()
            cfg = self._configs[(rows, groups, stream)] = cdriver.launch_config(
                la.grid(rows, groups), la.threads, la.dynamic_smem, stream, la.cluster, la.pdl)
        return cfg

    def __call__(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        """Check the arguments of this kernel's kind (see the public calls in gemmgen.api; an e4m3 out's scales as
        `out_scales=`), then launch."""
        p = self.built.kernel.problem
        tensors, env = self._check(*args, **kwargs)
        if p.kind is GemmKind.K_GROUPED:
            if env["m"] % self.plan.launch.block_m:  # the scheduler counts whole tiles per group
                raise ValueError(f"a: this k-grouped kernel's tiles have {self.plan.launch.block_m} rows; M must be "
                                 f"a multiple of that, got M={env['m']} (gemmgen.k_grouped_fp8_gemm_nt_wgrad picks "
                                 "a kernel for its M)")
        b = tensors["b"]
        k_fixed = p.kind is not GemmKind.K_GROUPED  # a k-grouped kernel takes its K at run time
        if b.shape[-2] != p.n or (k_fixed and b.shape[-1] != p.k):
            raise ValueError(f"b: this kernel was built for N={p.n}" + (f", K={p.k}" if k_fixed else "") +
                             f"; got N={b.shape[-2]}, K={b.shape[-1]}")
        if tensors["out"].dtype != self._dtypes["out"]:
            raise TypeError(f"out: this kernel writes {self._dtypes['out']}, got {tensors['out'].dtype}")
        for name in ("a", "b"):
            if tensors[name].dtype != self._dtypes[name]:
                raise TypeError(f"{name}: this kernel reads {self._dtypes[name]}, got {tensors[name].dtype}")
        if p.kind is GemmKind.K_GROUPED:  # every group K = 0: no kernel (after the checks above, as any call)
            empty = validate.k_grouped_without_k(tensors["out"], env, p.accumulate)
            if empty is not None:
                return empty
        return self.launch(tensors, env)

    def launch(self, tensors: Mapping[str, torch.Tensor], env: Mapping[str, int]) -> torch.Tensor:
        """Launch on arguments already checked by `validate` for this kernel's kind, N and K.

        `tensors`: the plan's operands by name ("a", "sa", "b", "sb", "out", and the grouped layout's "m_indices"
        or "masked_m"); `env`: run-time values ("m" rows of the per-group view, "g" groups, SA's strides)."""
        out = tensors["out"]
        if env["m"] == 0 or env["g"] == 0:
            return out
        if env["m"] > self._a_rows:  # a decode kernel loads only this many rows of A: more would be computed wrong
            raise ValueError(f"a: this kernel loads {self._a_rows} rows of A per tile (a decode kernel), so M must be "
                             f"at most {self._a_rows}, got M={env['m']} (the public calls pick a kernel for their M)")
        device = out.get_device()
        func = self._functions.get(device) or self._function(device)
        stream = _current_stream(device)
        cfg = self._launch_config(env["m"], env["g"], stream)
        if self.workspaces:  # the stream's eager buffer, or inside a capture one of the capture's own
            tensors = {**tensors, **self.workspaces.get(device, stream, env["m"], env["g"]).views}
        with self._lock:
            block = self._blocks[device]
            block.fill(tensors, env, self.built.name)
            code = self._launch_fn(cfg, func, block.array_address, None)
        if code:
            raise RuntimeError(f"cuLaunchKernelEx({self.built.name}) failed: {cdriver.error_text(code)}")
        return out
