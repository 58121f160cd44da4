"""gemmgen's IR: frozen dataclasses for the problem, the schedule, the target and the instruction table."""

from .config import BLOCK_K_FP8, CONFIG_FIELDS, GemmConfig, parse_overrides
from .kernel import Kernel
from .problem import SCALE_BLOCK, DType, GemmKind, GemmProblem, Major, ScaleRecipe, ceil_div
from .target import H100_SXM, H200_SXM, PRESETS, Target, preset
from .wgmma import LEGAL_N, WgmmaShape

__all__ = [
    "BLOCK_K_FP8", "CONFIG_FIELDS", "DType", "GemmConfig", "GemmKind", "GemmProblem", "H100_SXM", "H200_SXM",
    "Kernel", "LEGAL_N", "Major", "PRESETS", "SCALE_BLOCK", "ScaleRecipe", "Target", "WgmmaShape",
    "ceil_div", "parse_overrides", "preset",
]
