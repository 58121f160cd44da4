"""name_kernel: name the kernel from the finished IR (docs/CONVENTIONS.md #8); no name comes from compiler output.

Reads: the problem kind and scale recipe, the compile-time problem dims (N, K) and the whole config.
Decides: `Kernel.name`.
Runs last. The rows (and groups) are run-time arguments of the kernel, so they are not in the name.
"""

from __future__ import annotations

from ..ir import Kernel, Target


def kernel_name(kernel: Kernel, target: Target) -> str:
    p, c = kernel.problem, kernel.config
    assert c is not None and c.is_complete and c.cluster is not None, "name_kernel needs a complete config"
    mc = f"_mc{c.cluster}{c.shared_operand}" if c.cluster > 1 else ""
    split = f"_ks{c.k_splits}" if c.k_splits and c.k_splits > 1 else ""
    split += "g" if c.split_global else ""  # the splits meet in a global workspace, not through DSMEM
    grid = f"_g{c.num_sms}" if c.num_sms != target.num_sms else ""  # a capped persistent grid is another kernel
    acc = "_acc" if p.accumulate else ""  # D += A.B^T
    a_rows = f"_ar{c.a_rows}" if c.a_rows != c.block_m else ""  # a decode tile loading fewer rows of A
    sag = "_sag" if c.sa_gather else ""  # A scales always gathered by producer threads, never by TMA
    waves_n = f"_wn{c.wave_n}" if c.wave_n != c.block_n else ""  # column waves of m64 x wave_n wgmma
    pdl = "_pdl" if c.pdl else ""  # programmatic dependent launch (griddepcontrol in the kernel)
    swap = "_swab" if c.swap_ab else ""  # A and B swapped: the weights in wgmma's M, the tokens in its N
    ef = "_ef" if c.evict_first else ""  # the weights loaded with an L2 evict_first policy
    # GemmConfig's features and the ping-pong consumer, by their fields
    features = "".join(tag for on, tag in ((c.epilogue_per_wg, "_ew"), (c.balanced, "_bal"), (c.cross_tile, "_xt"),
                                           (c.a_shift, "_sh"), (c.pingpong, "_pp")) if on)
    ab = p.a_dtype.value if p.a_dtype is p.b_dtype else f"{p.a_dtype.value}x{p.b_dtype.value}"  # 0.1's names
    glu = "_swiglu" if p.swiglu else ""  # the fused SwiGLU epilogue (D has N / 2 columns)
    return (f"sm90_{ab}_{p.out_dtype.value}{acc}_nt{p.kind.tag}{p.scales.tag}{glu}_n{p.n}k{p.k}"
            f"_m{c.block_m}n{c.block_n}k{c.block_k}_s{c.stages}{mc}{split}_r{c.raster_group}_sw{c.swizzle_d}"
            f"_reg{c.producer_regs}x{c.math_regs}_a{c.acc_sets}{waves_n}{a_rows}{swap}{ef}{sag}{features}{grid}{pdl}")


def run(kernel: Kernel, target: Target) -> Kernel:
    return kernel.replace(name=kernel_name(kernel, target))
