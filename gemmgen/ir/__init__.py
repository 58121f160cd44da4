"""gemmgen's IR: frozen dataclasses for the problem, the schedule, the kernel plan, the target and the
instruction table."""

from .config import BLOCK_K_FP8, CONFIG_FIELDS, FEATURES, GemmConfig, check_overrides, parse_overrides
from .kernel import Kernel
from .plan import (
    BarrierPlan,
    DStorePlan,
    Extent,
    KernelPlan,
    LaunchPlan,
    ParamKind,
    ParamPlan,
    SchedulerKind,
    SmemLayout,
    TmaMapPlan,
)
from .problem import (
    CONTIGUOUS_ALIGNMENT,
    SCALE_BLOCK,
    DType,
    GemmKind,
    GemmProblem,
    Major,
    ScaleRecipe,
    ceil_div,
    is_int,
)
from .target import H100_SXM, H200_SXM, PRESETS, Target, as_target, preset
from .wgmma import LEGAL_N, WgmmaShape

__all__ = [
    "BLOCK_K_FP8", "BarrierPlan", "CONFIG_FIELDS", "FEATURES", "CONTIGUOUS_ALIGNMENT", "DStorePlan", "DType", "Extent",
    "GemmConfig", "GemmKind", "GemmProblem", "H100_SXM", "H200_SXM", "Kernel", "KernelPlan", "LEGAL_N", "LaunchPlan",
    "Major", "PRESETS", "ParamKind", "ParamPlan", "SCALE_BLOCK", "ScaleRecipe", "SchedulerKind", "SmemLayout",
    "Target", "TmaMapPlan", "WgmmaShape", "as_target", "ceil_div", "check_overrides", "is_int", "parse_overrides",
    "preset",
]
