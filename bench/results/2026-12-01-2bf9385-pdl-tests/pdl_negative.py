"""Negative control for tests/test_gpu_pdl.py's race (not part of the suite): the second kernel built WITHOUT its
griddepcontrol.wait (the render patched), launched with PDL after the first; how many of 10 runs differ from the
second call alone. With the wait (the shipped kernel) the test expects 0."""
import sys
import torch
sys.path.insert(0, "tests")
import gemmgen
from gemmgen import stages

orig = stages.render
def no_wait(kernel, *a, **k):
    src = orig(kernel, *a, **k)
    if kernel.name.endswith("_pdl") and "n4096k256" in kernel.name:
        src = src.replace('asm volatile("griddepcontrol.wait;" ::: "memory");', "// wait removed (negative control)")
    return src
stages.render = no_wait

M, N, K_LONG, K_SHORT = 256, 4096, 16384, 256
FIRST = {"block_m": 128, "block_n": 128, "num_sms": 64, "pdl": 1}
def ops(m, n, k):
    return gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda")), gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
a1, b1 = ops(M, N, K_LONG); a2, b2 = ops(M, N, K_SHORT)
plain = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
gemmgen.fp8_gemm_nt(a2, b2, plain)
out = torch.empty_like(plain)
for label, cfg in (("no wait", {"pdl": 1}), ):
    bad = []
    for _ in range(10):
        out.fill_(float("nan"))
        gemmgen.fp8_gemm_nt(a1, b1, out, config=FIRST)
        gemmgen.fp8_gemm_nt(a2, b2, out, config=cfg)
        torch.cuda.synchronize()
        bad.append(int((out != plain).sum()))
    k = gemmgen.get_kernel(M, N, K_SHORT, gemmgen.api.device_target(0), cfg)
    print(label, k.name, "ACQBULK" in k.sass, "differing outputs per run:", bad)
