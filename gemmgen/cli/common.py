"""What the CLI commands share: error guarding, shape/config parsing, the kernel summary."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import GemmgenError
from ..ir import DType, GemmConfig, GemmKind, GemmProblem, ScaleRecipe

F = TypeVar("F", bound=Callable[..., Any])
LAYOUTS = {"contiguous": GemmKind.M_GROUPED_CONTIGUOUS, "masked": GemmKind.M_GROUPED_MASKED,
           "k-grouped": GemmKind.K_GROUPED}


def guarded(fn: F) -> F:
    """Report gemmgen's errors, bad values and unreadable or unwritable files as a one-line CLI error."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (GemmgenError, ValueError) as exc:
            raise click.ClickException(str(exc)) from exc
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            raise click.ClickException(f"{exc.strerror or exc}:{where}") from exc

    return wrapper  # type: ignore[return-value]


def parse_shape(text: str) -> tuple[int, int, int]:
    parts = text.lower().split("x")
    try:
        m, n, k = (int(p) for p in parts)
    except ValueError:
        raise click.BadParameter(f"expected MxNxK with three integers, e.g. 4096x7168x16384; got {text!r}",
                                 param_hint="--shape") from None
    return m, n, k


def make_problem(m: int, n: int, k: int, groups: int | None, layout: str | None, out_dtype: str = "bf16",
                 accumulate: bool = False, recipe: str | None = None, dtype_a: str = "e4m3",
                 dtype_b: str = "e4m3", swiglu: bool = False) -> GemmProblem:
    if (groups is None) != (layout is None):
        raise click.UsageError("--groups and --layout go together: a grouped GEMM needs both (e.g. --groups 8 "
                               "--layout contiguous); a dense GEMM takes neither")
    if layout == "k-grouped" and out_dtype == "bf16":  # the weight gradient's D is fp32 (DeepGEMM's k-grouped call)
        out_dtype = "fp32"
    if recipe is None:  # bf16 inputs have no scales; FP8 ones default to DeepGEMM's block recipe
        recipe = "none" if dtype_a == "bf16" else "1x128/1x128" if layout == "k-grouped" else "1x128/128x128"
    out_dtype = {"float32": "fp32", "bfloat16": "bf16", "float8_e4m3fn": "e4m3"}.get(out_dtype, out_dtype)  # torch's
    kind, count = (GemmKind.NORMAL, 1) if layout is None or groups is None else (LAYOUTS[layout], groups)
    return GemmProblem(m, n, k, kind=kind, groups=count, out_dtype=DType(out_dtype), accumulate=accumulate,
                       scales=ScaleRecipe(recipe), a_dtype=DType(dtype_a), b_dtype=DType(dtype_b), swiglu=swiglu)


def summary(meta: dict[str, Any], *, m: object, groups: object, from_cache: bool, folder: Path,
            dest: Path | None, reasons: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The build summary, from a kernel's meta.json (so `inspect` and `build` print the same thing); `m` and
    `groups` are the problem's (a kernel takes them at run time), `reasons` the deciding passes' reasons for this
    problem (default: those recorded when the kernel was first built)."""
    c, r, p = meta["config"], meta["resources"], meta["problem"]
    return {
        "name": meta["name"],
        "problem": {"m": m, "n": p["n"], "k": p["k"], "kind": p.get("kind", "normal"), "groups": groups,
                    **{f: p.get(f) for f in ("a_dtype", "b_dtype", "out_dtype", "scales", "accumulate")},
                    "swiglu": bool(p.get("swiglu"))},  # meta before the fused epilogues: no SwiGLU
        "config": {**{f: c[f] for f in ("block_m", "block_n", "block_k", "stages", "cluster")},
                   "k_splits": c.get("k_splits", 1),
                   "split_global": c.get("split_global") or 0,  # 1: K splits meet in a workspace (meta before: 0)
                   "a_rows": c.get("a_rows") or c["block_m"],  # rows of A per ring slot (meta before it: the tile)
                   "sa_gather": c.get("sa_gather") or 0,  # 1: SA always gathered by producer threads (meta before: 0)
                   "wave_n": c.get("wave_n") or c["block_n"],  # the wgmma N (meta before it: the tile width)
                   "pdl": c.get("pdl") or 0,  # 1: programmatic dependent launch (meta before it: 0)
                   "evict_first": c.get("evict_first") or 0,  # 1: weights loaded L2 evict_first (meta before it: 0)
                   # the operand a pair shares (meta before multicast_b: A)
                   "multicast": GemmConfig(**c).shared_operand.upper() if c["cluster"] > 1 else "none",
                   **{f: c[f] for f in ("swizzle_ab", "swizzle_d")},
                   "math_warpgroups": GemmConfig(**c).math_warpgroups,
                   **{f: c[f] for f in ("producer_regs", "math_regs", "acc_sets", "raster_group", "num_sms")},
                   "threads": meta["threads"]},
        "resources": r,
        "sass_counts": meta.get("sass_counts") or {},
        # wgmma waits from the SASS: full (no group left in flight) and in-flight ones; serialized: ptxas waits
        # after every wgmma (meta of kernels built before it: none)
        "wgmma_waits": meta.get("wgmma_waits"),
        # SASS passes run on the cubin and instructions each patched (meta of kernels built before they existed: none)
        "sass_passes": meta.get("sass_passes") or {"enabled": [], "patches": {}},
        "reasons": meta.get("reasons", []) if reasons is None else reasons,
        # front-end and ptxas warnings, and ptxas's C7517 (an injected wgmma wait), from the NVRTC log
        "compiler_messages": meta.get("compiler_messages", []),
        "compile_seconds": meta["compile_seconds"],
        "nvrtc": ".".join(str(v) for v in meta.get("nvrtc_version", ())) or None,  # the SASS depends on it
        "from_cache": from_cache,
        "cache_folder": str(folder),
        "out": str(dest) if dest else None,
    }


def print_summary(s: dict[str, Any]) -> None:
    c, r, n, p = s["config"], s["resources"], s["sass_counts"], s["problem"]
    grouped = f", {p['kind']} with {p['groups']} groups" if p["kind"] != "normal" else ""
    grouped += ", SwiGLU epilogue (D has N / 2 columns)" if p.get("swiglu") else ""
    grouped += ", e4m3 D with 1x128 scales" if p.get("out_dtype") == "e4m3" else ""
    click.echo(f"kernel   {s['name']}")
    click.echo(f"problem  M={p['m']} N={p['n']} K={p['k']}{grouped}")
    click.echo(f"tile     block {c['block_m']}x{c['block_n']}x{c['block_k']}, {c['stages']} stages, "
               f"cluster {c['cluster']} (multicast {c['multicast']}), raster group {c['raster_group']}, "
               f"grid <= {c['num_sms']} CTAs" + (f", split-K {c['k_splits']} ("
                                                 + ("CTAs meeting in a global workspace)" if c["split_global"]
                                                    else "cluster ranks along K)")
                                                 if c["k_splits"] > 1 else "")
               + (f", A slots of {c['a_rows']} rows (serves M <= {c['a_rows']})" if c["a_rows"] < c["block_m"] else "")
               + (f", column waves of {c['wave_n']} (m64n{c['wave_n']} wgmma)" if c["wave_n"] < c["block_n"] else "")
               + (", SA gathered by producer threads" if c["sa_gather"] else "")
               + (", programmatic dependent launch (griddepcontrol)" if c["pdl"] else "")
               + (", weights loaded L2 evict_first" if c["evict_first"] else ""))
    for reason in s["reasons"]:
        click.echo(f"why      {reason['pass']}: {reason['reason']}")
    click.echo(f"swizzle  A/B {c['swizzle_ab']} B, D {c['swizzle_d'] or 'none'}{' B' if c['swizzle_d'] else ''}")
    click.echo(f"warps    1 TMA warpgroup ({c['producer_regs']} regs) + {c['math_warpgroups']} math warpgroup(s) "
               f"({c['math_regs']} regs, {c['acc_sets']} accumulator set(s)), {c['threads']} threads")
    click.echo(f"regs     {r['registers']} per thread at entry, spills {r['spill_stores']} B stores / "
               f"{r['spill_loads']} B loads, stack {r['stack_frame']} B")
    click.echo(f"smem     {r['static_smem']} B static + {r['dynamic_smem']} B dynamic")
    if n:
        click.echo("sass     " + ", ".join(f"{k} {v}" for k, v in n.items()))
    if w := s.get("wgmma_waits"):
        click.echo(f"wgmma    {w['mma']} wgmma, {w['in_flight']} waits leaving a group in flight, "
                   f"{w['full']} full waits"
                   + (": SERIALIZED, more than one full wait per two wgmma (ptxas waits after each; C7517 below)"
                      if w["serialized"] else ""))
    passes = s["sass_passes"]
    click.echo("passes   " + (", ".join(f"{name} ({passes['patches'].get(name, 0)} instructions patched)"
                                        for name in passes["enabled"]) or "none (GEMMGEN_SASS_PASSES)"))
    for message in s["compiler_messages"]:
        click.echo(f"compiler {message}")
    click.echo(f"compile  {s['compile_seconds']:.2f} s{' (from cache)' if s['from_cache'] else ''}, NVRTC {s['nvrtc']}")
    click.echo(f"files    {s['out'] or s['cache_folder']}")


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))
