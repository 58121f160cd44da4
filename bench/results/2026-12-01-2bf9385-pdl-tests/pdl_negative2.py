"""Negative control for tests/test_gpu_pdl.py::test_pdl_kernel_waits_for_a_primary_that_writes_its_out_late (not part
of the suite): the GEMM rendered WITHOUT its griddepcontrol.wait must be overwritten by the late fill."""
import sys
import torch
sys.path.insert(0, "tests")
import gemmgen
from gemmgen import stages
import importlib.util
spec = importlib.util.spec_from_file_location("t", "tests/test_gpu_pdl.py"); t = importlib.util.module_from_spec(spec); spec.loader.exec_module(t)

orig = stages.render
def no_wait(kernel, *a, **k):
    src = orig(kernel, *a, **k)
    if kernel.name.endswith("_pdl"):
        src = src.replace('asm volatile("griddepcontrol.wait;" ::: "memory");', "// wait removed (negative control)")
    return src
stages.render = no_wait
m, n, k = 64, 4096, 2048
a, b = t._operands(m, n, k)
plain = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
gemmgen.fp8_gemm_nt(a, b, plain)
out = torch.empty_like(plain)
gemmgen.fp8_gemm_nt(a, b, out, config={"pdl": 1})
torch.cuda.synchronize()
kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), {"pdl": 1})
bad = []
for _ in range(5):
    out.fill_(float("nan"))
    t._spin_then_fill(out, 0x3F80, 200_000)
    gemmgen.fp8_gemm_nt(a, b, out, config={"pdl": 1})
    torch.cuda.synchronize()
    bad.append((int((out != plain).sum()), int((out == 1.0).sum())))
print("no-wait kernel", kern.name, "ACQBULK in SASS:", "ACQBULK" in kern.sass, "(differing, ones) per run:", bad)
