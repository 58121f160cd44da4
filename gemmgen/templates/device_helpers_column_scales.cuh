// ---- device helpers of the 1x128/1x128 (column B scales) kernels (verbatim) ------------------------------
// The B scales of a thread's two columns 8i + 2(lane%4) and + 1 in one 8-byte shared load: the four lanes of a row
// read 32 contiguous bytes, and the 8 rows of a warp read the same 32 (a broadcast), so one wavefront per load.
__device__ __forceinline__ float2 ld_shared_v2_f32(u32 addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}
