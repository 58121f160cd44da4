"""Ordered compile stages (docs/CONVENTIONS.md #9): IR -> passes -> .cu -> NVRTC (.ptx, .cubin) -> SASS
-> SASS passes (control bits of the cubin, patched and verified) -> cache.

Every artifact is kept: with SASS passes, also the cubin and listing as NVRTC made them (kernel.unpatched.*).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .cache import KernelCache, cache_key
from .codegen.render import render
from .errors import CompileError, GemmgenError, IllegalConfigError, ToolNotFoundError
from .ir import H200_SXM, GemmConfig, GemmProblem, Kernel, Target, as_target, check_overrides
from .passes import run_pipeline, sass_interleave_ffma, sass_register_reuse
from .sass import patch as sass_patch
from .sass.parse import Instruction, opcode_counts, parse, wgmma_waits
from .settings import Settings
from .toolchain import disasm
from .toolchain.nvrtc import PtxasReport, compile_cuda, compiler_messages, nvrtc_version, options_for
from .tuning.table import TABLES

EMITTABLE = ("cu", "ptx", "cubin", "sass", "ir", "meta")
_FILES = {"cu": "kernel.cu", "ptx": "kernel.ptx", "cubin": "kernel.cubin", "sass": "kernel.sass",
          "ir": "ir.txt", "meta": "meta.json"}
SASS_COUNTED = ("QGMMA", "HGMMA", "UTMALDG", "UTMASTG", "FFMA", "SYNCS", "LDL", "STL", "USETMAXREG", "WARPGROUP")

# The SASS passes in the order they run, each a pure function from the instruction list (with the earlier passes'
# patches applied) to control-bit patches (docs/KERNEL_DESIGN.md, SASS control-bit passes).
SassPass = Callable[[list[Instruction]], list[sass_patch.Patch]]
SASS_PIPELINE: tuple[tuple[str, SassPass, str], ...] = (
    (sass_interleave_ffma.NAME, sass_interleave_ffma.run, "yield hints first: the reuse pass reads where they are"),
    (sass_register_reuse.NAME, sass_register_reuse.run, "then no reuse flag may stay on an instruction that yields"),
)
# A pass that may leave the SASS incoherent without a later one: {pass: the pass it needs}.
SASS_NEEDS = {sass_interleave_ffma.NAME: sass_register_reuse.NAME}


def default_sass_passes(nvrtc_version: tuple[int, int]) -> tuple[str, ...]:
    """The SASS passes a build runs when GEMMGEN_SASS_PASSES is unset, per NVRTC (ptxas) version: a pass goes on
    only for the versions where it was measured faster on the GPU. None measured yet."""
    del nvrtc_version  # every version: no passes until measured on the H200
    return ()


def resolve_sass_passes(requested: tuple[str, ...] | None, nvrtc_version: tuple[int, int]) -> tuple[str, ...]:
    """The SASS passes to run, in pipeline order: `requested` (Settings.sass_passes; None = the default for this
    NVRTC version), checked against the pipeline."""
    names = default_sass_passes(nvrtc_version) if requested is None else requested
    known = [name for name, _, _ in SASS_PIPELINE]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise GemmgenError(f"GEMMGEN_SASS_PASSES: unknown SASS pass(es) {', '.join(unknown)}; expected a comma list "
                           f"of {', '.join(known)}, or none")
    for name, needed in SASS_NEEDS.items():
        if name in names and needed not in names:
            raise GemmgenError(f"GEMMGEN_SASS_PASSES: {name} needs {needed} after it (it may set the yield hint on "
                               f"instructions that carry reuse flags); use {name},{needed}")
    return tuple(n for n in known if n in names)


@dataclass(frozen=True, slots=True)
class Resources:
    registers: int  # per thread at kernel entry (setmaxnreg then moves them between warpgroups)
    spill_stores: int
    spill_loads: int
    stack_frame: int
    static_smem: int  # bytes, from ptxas
    dynamic_smem: int  # bytes the launch asks for (the plan's launch.dynamic_smem)


@dataclass
class BuiltKernel:
    """One compiled kernel: its IR, its artifact folder and (on a GPU) a launcher."""

    kernel: Kernel
    target: Target
    folder: Path  # the cache folder holding every artifact
    meta: dict[str, Any]
    from_cache: bool
    _launcher: Any = field(default=None, repr=False)

    @property
    def name(self) -> str:
        assert self.kernel.name
        return self.kernel.name

    @property
    def config(self) -> GemmConfig:
        assert self.kernel.config is not None
        return self.kernel.config

    def _text(self, fname: str) -> str:
        return (self.folder / fname).read_text()

    @property
    def cu(self) -> str:
        return self._text("kernel.cu")

    @property
    def ptx(self) -> str:
        return self._text("kernel.ptx")

    @property
    def cubin(self) -> bytes:
        return (self.folder / "kernel.cubin").read_bytes()

    @property
    def sass(self) -> str:
        """The SASS listing; disassembled now (and kept) if the build skipped it."""
        path = self.folder / "kernel.sass"
        if not path.is_file():
            path.write_text(disasm.sass(self.folder / "kernel.cubin"))
        return path.read_text()

    @property
    def resources(self) -> Resources:
        return Resources(**self.meta["resources"])

    @property
    def launcher(self) -> Any:
        """The runtime launcher (created on first use; loading the cubin needs a GPU)."""
        if self._launcher is None:
            from .runtime.launch import Launcher

            self._launcher = Launcher(self)
        return self._launcher

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Launch on torch tensors, arguments checked for this kernel's kind: (a, sa, b, sb, out) for a dense
        kernel (see fp8_gemm_nt), plus m_indices (contiguous) or masked_m (masked) for a grouped one; bf16 kernels
        take no scales: (a, b, out), (a, b, out, m_indices) in the contiguous layout, (a, b, out, masked_m) in the
        masked one; an e4m3 out takes its scales as `out_scales=`."""
        return self.launcher(*args, **kwargs)


def forced_fields(config: GemmConfig | dict[str, int] | None) -> tuple[tuple[str, int], ...]:
    if config is None:
        return ()
    if isinstance(config, GemmConfig):
        pairs = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
        return tuple((k, v) for k, v in pairs.items() if v is not None)
    if not isinstance(config, Mapping):
        raise TypeError(f"config: expected a dict of schedule fields or a GemmConfig, got {type(config).__name__}")
    return tuple(sorted(check_overrides(config).items()))


def decide(problem: GemmProblem, forced: tuple[tuple[str, int], ...], target: Target, settings: Settings,
           dump_ir: Path | None = None) -> Kernel:
    """The finished kernel IR: the user's pins, then the first tuned table row for the problem (tuning/table.py),
    then the passes. A row whose fields make an illegal config with the pins is skipped, and the reason says so."""
    kernel = Kernel(problem, forced=forced)
    if forced:  # the fields the user chose, named as such (the passes only fill the others)
        kernel = kernel.because("pinned", ", ".join(f"{k}={v}" for k, v in forced) + ": given by the caller")
    row = TABLES.lookup(problem, target, settings.cache_dir, settings.tuned)
    if row is None:
        return run_pipeline(kernel, target, dump_ir)
    clash = [f"{k}={row.config[k]} (pinned {v})" for k, v in forced if row.config.get(k, v) != v]
    if clash:  # the row was timed as another kernel: its other fields need not suit the pinned one
        kernel = kernel.because("tuned", f"{row.reason()}: skipped, timed with {', '.join(clash)}")
        return run_pipeline(kernel, target, dump_ir)
    try:
        return run_pipeline(kernel, target, dump_ir, (row.config, row.reason()))
    except IllegalConfigError as exc:
        skipped = f"{row.reason()}: skipped, illegal with the pinned fields ({exc})"
        return run_pipeline(kernel.because("tuned", skipped), target, dump_ir)


def build(problem: GemmProblem, config: GemmConfig | dict[str, int] | None = None, target: Target = H200_SXM, *,
          settings: Settings | None = None, dump_ir: Path | None = None) -> BuiltKernel:
    """Decide, render, compile (or load from the cache) one kernel. Needs no GPU.

    `config`: None (let the passes decide), a dict of fields to pin (like --config), or a whole GemmConfig.
    Raises IllegalConfigError listing every violated rule, or CompileError with the NVRTC log and .cu path.
    """
    settings = settings or Settings.from_env()
    target = as_target(target)
    kernel = decide(problem, forced_fields(config), target, settings, dump_ir)
    assert kernel.name
    cache = KernelCache(settings.cache_dir)
    store = _writable(cache)  # a read-only (shared, prebuilt) cache is read; new kernels go to a user folder
    source = render(kernel, __version__, store.template_dir())
    options = options_for(target.arch)
    sass_passes = resolve_sass_passes(settings.sass_passes, nvrtc_version())
    key = cache_key(source, nvrtc_version(), options, __version__, sass_passes)
    readable = (cache,) if store is cache else (cache, store)
    for where in readable if settings.use_cache else ():
        hit = _cached(kernel, target, where, key)
        if hit is not None:
            return hit
    with store.lock(kernel.name, key):  # concurrent builders of this kernel: the first compiles, the rest load it
        hit = _cached(kernel, target, store, key, warn=False) if settings.use_cache else None  # warned above
        if hit is not None:
            return hit
        files = _compile(kernel, target, source, key, store, settings, sass_passes)
        folder = store.publish(kernel.name, key, files)
    return BuiltKernel(kernel, target, folder, json.loads((folder / "meta.json").read_text()), from_cache=False)


_FALLBACKS: dict[Path, KernelCache] = {}


def _writable(cache: KernelCache) -> KernelCache:
    """The cache, or where new kernels go when it cannot be written: the user's default folder, else one under the
    system's temporary directory; said once per process, in one line."""
    if cache.writable():
        return cache
    if cache.root not in _FALLBACKS:
        options = [Path.home() / ".cache" / "gemmgen", Path(tempfile.gettempdir()) / f"gemmgen-{os.getuid()}"]
        fallback = next((KernelCache(p) for p in options if p != cache.root and KernelCache(p).writable()), None)
        if fallback is None:
            raise GemmgenError(f"kernel cache {cache.root} is read-only and no fallback folder is writable: set "
                               "GEMMGEN_CACHE_DIR to a writable folder")
        print(f"gemmgen: kernel cache {cache.root} is read-only; new kernels go to {fallback.root}", file=sys.stderr)
        _FALLBACKS[cache.root] = fallback
    return _FALLBACKS[cache.root]


def _cached(kernel: Kernel, target: Target, cache: KernelCache, key: str, warn: bool = True) -> BuiltKernel | None:
    assert kernel.name
    folder = cache.lookup(kernel.name, key, warn)
    if folder is None:
        return None
    return BuiltKernel(kernel, target, folder, json.loads((folder / "meta.json").read_text()), from_cache=True)


def _compile(kernel: Kernel, target: Target, source: str, key: str, cache: KernelCache,
             settings: Settings, sass_passes: tuple[str, ...]) -> dict[str, bytes]:
    assert kernel.name and kernel.config
    result = compile_cuda(source, f"{kernel.name}.cu", target.arch)
    if settings.nvrtc_verbose:
        print(f"[gemmgen] nvrtc {' '.join(result.options)} ({result.seconds:.2f} s)\n{result.log}")
    if not result.ok:
        failed = cache.root / "failed" / f"{kernel.name}-{key[:16]}"
        failed.mkdir(parents=True, exist_ok=True)
        (failed / "kernel.cu").write_text(source)
        (failed / "compile.log").write_text(result.log)
        raise CompileError(kernel.name, failed / "kernel.cu", result.log,
                           f"gemmgen nvrtc {failed / 'kernel.cu'} --arch {target.arch}")
    files = {"kernel.cu": source.encode(), "kernel.ptx": result.ptx.encode(), "kernel.cubin": result.cubin,
             "ir.txt": kernel.render_text().encode(), "compile.log": result.log.encode()}
    sass: str | None = None
    counts: dict[str, int] = {}
    if sass_passes:
        try:
            sass = _disassemble(result.cubin)
        except ToolNotFoundError as exc:
            raise ToolNotFoundError(f"GEMMGEN_SASS_PASSES={','.join(sass_passes)} needs nvdisasm to patch the cubin "
                                    f"({exc}); install it, or set GEMMGEN_SASS_PASSES=none") from exc
        files["kernel.unpatched.cubin"], files["kernel.unpatched.sass"] = result.cubin, sass.encode()
        files["kernel.cubin"], sass, counts = run_sass_passes(result.cubin, sass, sass_passes)
    elif settings.keep_sass:
        sass = _disassemble(result.cubin)
    if sass is not None:
        files["kernel.sass"] = sass.encode()
    meta = _meta(kernel, target, key, result.seconds, result.log, result.options, sass)
    # Which SASS passes ran and how many instructions each patched ({} and [] without passes).
    meta["sass_passes"] = {"enabled": list(sass_passes), "patches": counts}
    files["meta.json"] = json.dumps(meta, indent=2).encode()
    return files


def run_sass_passes(cubin: bytes, sass: str, passes: tuple[str, ...]) -> tuple[bytes, str, dict[str, int]]:
    """Run the named SASS passes (in pipeline order) on a cubin and its nvdisasm listing: (patched cubin, its
    listing, {pass: instructions patched}). The patched cubin is disassembled again and checked against the
    original (sass.patch.verify) and against the patches (every high word as the passes left it)."""
    instructions = parse(sass)
    counts: dict[str, int] = {}
    patched = cubin
    for name, run, _why in SASS_PIPELINE:
        if name in passes:
            patches = run(instructions)
            counts[name] = len(patches)
            patched = sass_patch.apply(patched, patches)
            instructions = sass_patch.patched(instructions, patches)
    stale = sass_register_reuse.incoherent(instructions)
    if stale:
        raise sass_patch.SassPatchError(f"{len(stale)} instruction(s) may yield and still set reuse flags after "
                                        f"{', '.join(passes)} (first: {stale[0].function}+{stale[0].address:#x})")
    if patched == cubin:
        return cubin, sass, counts
    after = _disassemble(patched)
    sass_patch.verify(sass, after)
    if [i.high for i in parse(after)] != [i.high for i in instructions]:
        raise sass_patch.SassPatchError("the patched cubin's high words differ from the ones the passes decided")
    return patched, after, counts


def _disassemble(cubin: bytes) -> str:
    with tempfile.TemporaryDirectory(prefix="gemmgen-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        return disasm.sass(path)


def _meta(kernel: Kernel, target: Target, key: str, seconds: float, log: str, options: tuple[str, ...],
          sass: str | None) -> dict[str, Any]:
    assert kernel.name and kernel.config and kernel.plan
    report = PtxasReport.parse(log, kernel.name)
    resources = Resources(report.registers, report.spill_stores, report.spill_loads, report.stack_frame,
                          report.static_smem, kernel.plan.launch.dynamic_smem)
    counts = waits = None
    if sass is not None:
        instructions = parse(sass)
        all_counts = opcode_counts(instructions)
        counts = {op: all_counts.get(op, 0) for op in SASS_COUNTED}
        w = wgmma_waits(instructions)
        waits = {"mma": w.mma, "full": w.full, "in_flight": w.in_flight, "serialized": w.serialized}
    return {
        "name": kernel.name,
        "cache_key": key,
        "gemmgen_version": __version__,
        "nvrtc_version": list(nvrtc_version()),
        "nvrtc_options": list(options),
        "target": dataclasses.asdict(target),
        # The rows (and groups) are run-time arguments: the cached kernel serves every call whose config selection
        # lands on it.
        "problem": {"kind": kernel.problem.kind.value, "m": "run time", "n": kernel.problem.n, "k": kernel.problem.k,
                    "groups": "run time" if kernel.problem.kind.is_grouped else 1,
                    "first_built_for_m": kernel.problem.m, "a_dtype": kernel.problem.a_dtype.value,
                    "b_dtype": kernel.problem.b_dtype.value, "out_dtype": kernel.problem.out_dtype.value,
                    "scales": kernel.problem.scales.value, "accumulate": kernel.problem.accumulate,
                    "swiglu": kernel.problem.swiglu},
        "params": [p.name for p in kernel.plan.params],
        "config": dataclasses.asdict(kernel.config),
        "threads": kernel.plan.launch.threads,
        "compile_seconds": round(seconds, 3),
        "resources": dataclasses.asdict(resources),
        "sass_counts": counts,
        "wgmma_waits": waits,
        "compiler_messages": compiler_messages(log),
        "reasons": [{"pass": who, "reason": why} for who, why in kernel.reasons],
    }


def export(built: BuiltKernel, out_root: Path, emit: tuple[str, ...] = EMITTABLE) -> Path:
    """Copy the chosen artifacts to out_root/<kernel name>/ (the CLI's generated/ folder)."""
    if Path(out_root).exists() and not Path(out_root).is_dir():
        raise GemmgenError(f"output folder {out_root} is a file: give --out a folder")
    dest = Path(out_root) / built.name
    dest.mkdir(parents=True, exist_ok=True)
    for kind in emit:
        if kind == "sass":
            built.sass  # noqa: B018 - disassembles on demand if the build skipped it
        shutil.copyfile(built.folder / _FILES[kind], dest / _FILES[kind])
    return dest
