"""The split-K workspace of a kernel whose K splits meet in global memory (GemmConfig.split_global).

One zeroed buffer per (device, stream) and kernel: the fp32 partial tiles, then one int32 arrival counter per
tile. A kernel's last arrival on a tile resets its counter, so the counters are zero between launches and no
memset runs per call; calls on one stream are ordered, so they may share the buffer. A CUDA graph captures the
buffer of its capture stream (allocated, and zeroed by a captured memset, on the first captured call if that
stream had none): replaying that graph on another stream while calls run on the capture stream would share it.
"""

from __future__ import annotations

import torch

from ..ir import LaunchPlan

COUNTER_ALIGN_FLOATS = 4  # the counters start 16-byte aligned after the partials


class Workspaces:
    def __init__(self, launch: LaunchPlan):
        self.launch = launch
        self._buffers: dict[tuple[int, int], tuple[int, int, dict[str, torch.Tensor]]] = {}

    def views(self, device: int, stream: int, m: int, g: int) -> dict[str, torch.Tensor]:
        """The kernel's `ws_partials` and `ws_counters` for a launch of M rows and G groups on this stream."""
        floats, counters = self.launch.workspace_floats(m, g)
        held = self._buffers.get((device, stream))
        if held is not None and held[0] >= floats and held[1] >= counters:
            return held[2]
        if held is not None:  # grow: the larger of both, so alternating sizes do not reallocate every call
            floats, counters = max(floats, held[0]), max(counters, held[1])
        start = -(-floats // COUNTER_ALIGN_FLOATS) * COUNTER_ALIGN_FLOATS
        buf = torch.zeros(start + counters, dtype=torch.float32, device=torch.device("cuda", device))
        views = {"ws_partials": buf[:max(floats, 1)], "ws_counters": buf[start:].view(torch.int32)}
        self._buffers[(device, stream)] = (floats, counters, views)
        return views
