"""The IR the pass pipeline rewrites: a problem, the schedule decided so far, and what the user forced."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .config import GemmConfig
from .problem import GemmProblem


@dataclass(frozen=True, slots=True)
class Kernel:
    problem: GemmProblem
    config: GemmConfig | None = None  # None until select_config runs
    forced: tuple[tuple[str, int], ...] = ()  # (field, value) the user pinned; passes must keep them
    name: str | None = None  # decided by name_kernel, from the IR alone (STYLE.md #8)

    def forced_dict(self) -> dict[str, int]:
        return dict(self.forced)

    def replace(self, **changes: object) -> Kernel:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def render_text(self, with_m: bool = True) -> str:
        """A stable, readable dump for ir.txt and --dump-ir. The emitted .cu header prints it `with_m=False`:
        M is a run-time argument, so kernels chosen for different M share one source (and one cache entry)."""
        problem = str(self.problem)
        if not with_m:
            problem = problem.replace(f"m={self.problem.m}, ", "m=<run time>, ")
        lines = [f"kernel {self.name or '<unnamed>'}", f"  problem {problem}"]
        lines.append(f"  forced {self.forced_dict() or '{}'}")
        if self.config is None:
            lines.append("  config <undecided>")
        else:
            lines.append("  config")
            for field in dataclasses.fields(self.config):
                lines.append(f"    {field.name} = {getattr(self.config, field.name)}")
        return "\n".join(lines) + "\n"
