"""Do two versions of gemmgen emit the same SASS? Each kernel spec is built (CPU only: NVRTC and the disassembler)
by this tree and by an earlier commit's, and their instruction streams are compared with addresses and control
bits dropped: the check behind "the existing kernels' SASS is unchanged" in a commit that should not touch them.

    python bench/sass_diff.py --before 454b7b8                     # the default specs below
    python bench/sass_diff.py --before HEAD~3 --spec "--shape 32x4096x7168" --spec "--shape 4096x7168x2048"

A spec is the argument text of `gemmgen build`. Prints one line per spec (same / DIFF, both kernel names, the
instruction counts) and exits 1 if any differs or fails to build.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmgen.sass.parse import parse  # noqa: E402

# One default kernel of each kind and path: dense prefill (256x128 multicast), decode (A slots of 8 rows), split-K
# at M = 64 and 128, contiguous paired and with column waves, masked 128x192 twice, wgrad (column scales, fp32
# accumulate), bf16, the tensor and channel recipes.
DEFAULT_SPECS = [
    "--shape 4096x7168x16384", "--shape 1x7168x16384", "--shape 128x2112x7168", "--shape 64x2112x7168",
    "--shape 32768x4096x7168 --groups 4 --layout contiguous", "--shape 8192x7168x2048 --groups 32 --layout contiguous",
    "--shape 256x7168x2048 --groups 4 --layout masked", "--shape 1024x4096x7168 --groups 2 --layout masked",
    "--shape 4096x7168x4096 --recipe 1x128/1x128 --out-dtype fp32 --accumulate",
    "--shape 4096x7168x4096 --dtype-a bf16 --dtype-b bf16",
    "--shape 4096x7168x4096 --recipe tensor", "--shape 4096x7168x4096 --recipe channel",
]


def instructions(sass: str) -> list[str]:
    """The instruction texts of a disassembly (gemmgen.sass.parse), in order, without addresses, encodings or
    control bits."""
    return [" ".join(part for part in (i.predicate, i.opcode, i.operands) if part) for i in parse(sass)]


def build(tree: Path, spec: str, workdir: Path) -> tuple[str, list[str]]:
    """`gemmgen build SPEC` with the package at `tree` (its own cache): the kernel's name and instructions."""
    workdir.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "GEMMGEN_CACHE_DIR": str(workdir / "cache")}
    cmd = [sys.executable, "-c", "from gemmgen.cli import main; main()", "build", *shlex.split(spec),
           "--emit", "sass,meta"]
    res = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{spec} ({tree}): {(res.stdout + res.stderr).strip()[-400:]}")
    sass = next((workdir / "generated").glob("*/kernel.sass"))
    return sass.parent.name, instructions(sass.read_text())


def export_tree(commit: str, dest: Path) -> Path:
    """The gemmgen package of `commit`, extracted under dest (git archive: no checkout of this tree changes)."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "gemmgen"], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"--before {commit!r}: not a revision of {ROOT} with a gemmgen package "
                         f"({archive.stderr.decode().strip()})")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="a commit (or any git revision) of this repository")
    ap.add_argument("--spec", action="append", default=None, help="`gemmgen build` arguments (repeatable)")
    args = ap.parse_args(argv)
    specs = args.spec or DEFAULT_SPECS
    differ = 0
    with tempfile.TemporaryDirectory(prefix="sass-diff-") as tmp:
        before = export_tree(args.before, Path(tmp) / "before")
        for i, spec in enumerate(specs):
            try:
                name_b, ins_b = build(before, spec, Path(tmp) / f"b{i}")
                name_a, ins_a = build(ROOT, spec, Path(tmp) / f"a{i}")
            except RuntimeError as exc:
                print(f"FAIL  {exc}")
                differ += 1
                continue
            same = ins_a == ins_b
            differ += not same
            names = name_a if name_a == name_b else f"{name_b} -> {name_a}"
            print(f"{'same' if same else 'DIFF'}  {names}  ({len(ins_b)} / {len(ins_a)} instructions)", flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
