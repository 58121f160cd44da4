"""The split-K workspace of a kernel whose K splits meet in global memory (GemmConfig.split_global).

One zeroed buffer per (device, stream) and kernel: the fp32 partial tiles, then one int32 arrival counter per
tile. A kernel's last arrival on a tile resets its counter, so the counters are zero between launches and no
memset runs per call; calls on one stream are ordered, so they may share the buffer.
CUDA graphs: a buffer first made inside a capture comes from the graph's memory pool, whose earlier contents other
captures may have left there, and the memset that zeroed it belongs to that one graph; so every captured call on
such a buffer also captures a zeroing of its counters (one int per tile), and a graph's replay starts from zero
whichever graph ran before. A buffer outgrown by a larger launch is kept, not freed: a captured graph may still
point at it. Replaying a graph on another stream while calls run on its capture stream would share a buffer.
"""

from __future__ import annotations

import torch

from ..ir import LaunchPlan

COUNTER_ALIGN_FLOATS = 4  # the counters start 16-byte aligned after the partials


class Workspace:
    """One stream's buffer: views by parameter name, and whether it was made inside a CUDA graph capture."""

    __slots__ = ("floats", "counters", "views", "captured")

    def __init__(self, floats: int, counters: int, views: dict[str, torch.Tensor], captured: bool):
        self.floats, self.counters, self.views, self.captured = floats, counters, views, captured

    def before_launch(self) -> None:
        """A buffer made inside a capture: zero its counters in every captured call (see the module doc)."""
        if self.captured and torch.cuda.is_current_stream_capturing():
            self.views["ws_counters"].zero_()


class Workspaces:
    def __init__(self, launch: LaunchPlan):
        self.launch = launch
        self._buffers: dict[tuple[int, int], Workspace] = {}
        self._outgrown: list[Workspace] = []  # kept alive: a captured graph may still use them

    def get(self, device: int, stream: int, m: int, g: int) -> Workspace:
        """The workspace for a launch of M rows and G groups on this stream (grown if too small)."""
        floats, counters = self.launch.workspace_floats(m, g)
        held = self._buffers.get((device, stream))
        if held is not None and held.floats >= floats and held.counters >= counters:
            return held
        if held is not None:  # grow: the larger of both, so alternating sizes do not reallocate every call
            floats, counters = max(floats, held.floats), max(counters, held.counters)
            self._outgrown.append(held)
        start = -(-floats // COUNTER_ALIGN_FLOATS) * COUNTER_ALIGN_FLOATS
        captured = torch.cuda.is_current_stream_capturing()
        buf = torch.zeros(start + counters, dtype=torch.float32, device=torch.device("cuda", device))
        views = {"ws_partials": buf[:max(floats, 1)], "ws_counters": buf[start:].view(torch.int32)}
        self._buffers[(device, stream)] = Workspace(floats, counters, views, captured)
        return self._buffers[(device, stream)]
