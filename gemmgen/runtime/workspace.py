"""The split-K workspace of a kernel whose K splits meet in global memory (GemmConfig.split_global).

A workspace holds the fp32 partial tiles, then one int32 arrival counter per tile. A kernel's last arrival on a tile
resets its counter, so counters that start at zero are zero again after every launch. Two kinds of buffer, never
shared:
- **Eager calls**: one buffer per (device, stream) and kernel, made (and zeroed, once) outside any capture. Calls on
  one stream are ordered, so they share it with no memset per call; calls on other streams have their own. An
  outgrown buffer is dropped: it was made and used on its own stream, so torch's allocator reuses it only after the
  launches that used it.
- **Captured calls** (inside a CUDA-graph capture): a buffer of its own per captured call, from the graph's memory
  pool, whose counters a zeroing captured with the call resets on every replay (pool memory may hold what other
  tensors of the graph left there). It is released to the graph's pool after the launch, like any temporary of the
  captured code, so the graph keeps it while it lives and later captured calls reuse it in stream order.
So a graph's replays never touch an eager buffer, eager calls never touch a graph's, and two graphs have two pools:
eager calls and replays interleave in any order on any streams. Graphs that share one pool (`pool=`) share their
temporaries, ours included, and must then not be replayed concurrently, as torch says of any such graphs.
"""

from __future__ import annotations

import torch

from ..ir import LaunchPlan

COUNTER_ALIGN_FLOATS = 4  # the counters start 16-byte aligned after the partials
is_capturing = torch.cuda.is_current_stream_capturing


class Workspace:
    """One buffer's views by kernel parameter name, and how much it holds."""

    __slots__ = ("floats", "counters", "views")

    def __init__(self, floats: int, counters: int, views: dict[str, torch.Tensor]):
        self.floats, self.counters, self.views = floats, counters, views


def _make(device: int, floats: int, counters: int, zeroed: bool) -> Workspace:
    """A buffer of `floats` partials and `counters` counters on `device` (the current stream's allocation)."""
    start = -(-floats // COUNTER_ALIGN_FLOATS) * COUNTER_ALIGN_FLOATS
    place = torch.device("cuda", device)
    buf = torch.zeros(start + counters, dtype=torch.float32, device=place) if zeroed else torch.empty(
        start + counters, dtype=torch.float32, device=place)
    views = {"ws_partials": buf[:max(floats, 1)], "ws_counters": buf[start:].view(torch.int32)}
    if not zeroed:
        views["ws_counters"].zero_()  # captured: runs on every replay (the partials need no zeroing)
    return Workspace(floats, counters, views)


class Workspaces:
    def __init__(self, launch: LaunchPlan):
        self.launch = launch
        self._eager: dict[tuple[int, int], Workspace] = {}

    def get(self, device: int, stream: int, m: int, g: int) -> Workspace:
        """The workspace for a launch of M rows and G groups on `stream` (torch's current stream of `device`): a new
        one inside a CUDA-graph capture (see the module doc), else the stream's eager one, grown if too small."""
        floats, counters = self.launch.workspace_floats(m, g)
        if is_capturing():
            return _make(device, floats, counters, zeroed=False)
        held = self._eager.get((device, stream))
        if held is not None and held.floats >= floats and held.counters >= counters:
            return held
        if held is not None:  # grow: the larger of both, so alternating sizes do not reallocate every call
            floats, counters = max(floats, held.floats), max(counters, held.counters)
        made = self._eager[(device, stream)] = _make(device, floats, counters, zeroed=True)
        return made

    def eager(self) -> dict[tuple[int, int], Workspace]:
        """The eager buffers by (device, stream), for tests that check the counters are back at zero."""
        return dict(self._eager)
