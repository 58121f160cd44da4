"""rasterize: decide the persistent tile order's group width (N-units walked before the next M block).

Reads: block_m, block_n, cluster, num_sms. Decides: raster_group. Runs after select_config.
Tiles are visited in slabs of G N-units (an N-unit is `cluster` adjacent N blocks); one wave of num_sms tiles
then touches about G*block_n rows of B and ceil(num_sms/G)*block_m rows of A. We pick G in {8, 16} that
minimises that footprint (DeepGEMM's scheduler rule, docs/KERNEL_DESIGN.md), so the wave's operands stay in L2.
Grouped schedulers apply the same order inside each group (contiguous: over the concatenated rows).
"""

from __future__ import annotations

from ..ir import Kernel, Target, ceil_div


def _footprint(group: int, block_m: int, block_n: int, cluster: int, num_sms: int) -> int:
    return group * cluster * block_n + ceil_div(num_sms, group * cluster) * block_m


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.has_tile and cfg.num_sms is not None, "rasterize runs after select_config"
    bm, bn, cluster, sms = cfg.block_m, cfg.block_n, cfg.cluster, cfg.num_sms
    assert bm is not None and bn is not None and cluster is not None
    group = min((8, 16), key=lambda g: _footprint(g, bm, bn, cluster, sms))
    decided = cfg.decide(raster_group=group)
    why = (f"group {decided.raster_group}: a wave touches {_footprint(group, bm, bn, cluster, sms)} A+B rows "
           f"(group {24 - group}: {_footprint(24 - group, bm, bn, cluster, sms)})")
    return kernel.replace(config=decided).because("rasterize", why)
