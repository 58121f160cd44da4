"""examples/moe_expert_parallel.py under torch.distributed.run: two ranks (one GPU each) give the one-GPU layer's
output on their tokens. Needs two GPUs; one rank on one GPU runs the same exchange code (all_to_all with itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "moe_expert_parallel.py"


@pytest.mark.parametrize("ranks", [1, 2])
def test_the_expert_parallel_layer_matches_one_gpu(ranks: int, tmp_path: Path) -> None:
    if torch.cuda.device_count() < ranks:
        pytest.skip(f"needs {ranks} GPUs, found {torch.cuda.device_count()}")
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])  # gemmgen from the tree, any cwd
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
                          "--master-port", str(29500 + ranks), str(EXAMPLE), "--experts", "16", "--tokens", "300"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": path})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["ok"] and report["world"] == ranks, report
