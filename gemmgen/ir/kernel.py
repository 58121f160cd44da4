"""The IR the pass pipeline rewrites: a problem, the schedule decided so far, what the user forced, and the plan."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .config import GemmConfig
from .plan import KernelPlan
from .problem import GemmProblem


@dataclass(frozen=True, slots=True)
class Kernel:
    problem: GemmProblem
    config: GemmConfig | None = None  # the pipeline starts it as GemmConfig.draft(forced)
    forced: tuple[tuple[str, int], ...] = ()  # (field, value) the user pinned
    plan: KernelPlan | None = None  # decided by plan_kernel from the finished config
    name: str | None = None  # decided by name_kernel, from the IR alone (docs/CONVENTIONS.md #8)
    reasons: tuple[tuple[str, str], ...] = ()  # (pass, why it decided what it did), in pipeline order

    def because(self, pass_name: str, reason: str) -> Kernel:
        """This kernel with one more recorded reason (a deciding pass says why: waves, fill, bytes, registers)."""
        return dataclasses.replace(self, reasons=(*self.reasons, (pass_name, reason)))

    def forced_dict(self) -> dict[str, int]:
        return dict(self.forced)

    def replace(self, **changes: object) -> Kernel:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def render_text(self, with_m: bool = True) -> str:
        """A stable, readable dump for ir.txt and --dump-ir. The emitted .cu header prints it `with_m=False`: the
        rows (and groups) are run-time arguments, so kernels chosen for different M share one source and cache
        entry."""
        problem = str(self.problem)
        if not with_m:
            problem = problem.replace(f"m={self.problem.m}, ", "m=<run time>, ")
            problem = problem.replace(f"groups={self.problem.groups}, ", "groups=<run time>, ")
        lines = [f"kernel {self.name or '<unnamed>'}", f"  problem {problem}"]
        lines.append(f"  forced {self.forced_dict() or '{}'}")
        if self.config is None:
            lines.append("  config <undecided>")
        else:
            lines.append("  config")
            for field in dataclasses.fields(self.config):
                lines.append(f"    {field.name} = {getattr(self.config, field.name)}")
        if self.reasons and with_m:  # reasons cite M (waves, fill): not part of the shared source
            lines.append("  reasons")
            lines += [f"    {who}: {why}" for who, why in self.reasons]
        if self.plan is not None:
            lines.append("  plan")
            lines += [f"    {line}" for line in self.plan.render_lines()]
        return "\n".join(lines) + "\n"
