"""Is the enqueue loop's per-call time the host CPU's clock ramp? 200-call loops of fp8_gemm_nt (new pointers) and
torch add_, each timed right after a sync (as enqueue_us) or after a 30 ms busy spin, interleaved over 15 rounds."""
import statistics, time, sys, json
import torch, gemmgen
m, n, k = 64, 7168, 2048
b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
sets = []
for _ in range(100):
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    sets.append((a, sa, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
small = torch.zeros(16, device="cuda")
def gg(i):
    s = sets[i % 100]; gemmgen.fp8_gemm_nt((s[0], s[1]), (b, sb), s[2])
def add(i):
    small.add_(1)
def spin(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
def loop(fn, pre):
    torch.cuda.synchronize()
    if pre: spin(pre)
    t0 = time.perf_counter()
    for i in range(200): fn(i)
    dt = time.perf_counter() - t0
    torch.cuda.synchronize()
    return dt / 200 * 1e6
gg(0); add(0)
res = {}
for r in range(15):
    for name, fn in (("gemmgen new pointers", gg), ("torch add_", add)):
        for pre in (0, 0.03):
            res.setdefault(f"{name}, spin {pre*1e3:.0f} ms", []).append(loop(fn, pre))
out = {k: {"median": statistics.median(v), "min": min(v), "all": v} for k, v in res.items()}
for k, v in out.items(): print(f"{k:34s} median {v['median']:6.2f} min {v['min']:6.2f}")
json.dump(out, open(sys.argv[1], "w"), indent=1)
