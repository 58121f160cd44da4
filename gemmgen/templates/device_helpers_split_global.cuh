
// ---- device helpers of the kernels whose K splits meet in a global workspace (verbatim) -------------------
// A partial tile's four fp32, to L2 (.cg: the adding CTA runs on another SM, so nothing is kept in this one's L1).
__device__ __forceinline__ void st_global_cg_v4(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
// Another CTA's four fp32, from L2 (.cg: never a line this SM's L1 may hold from before).
__device__ __forceinline__ float4 ld_global_cg_v4(const float* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
  return v;
}
// Count this CTA in and learn how many came before (PTX ISA, atom: .acq_rel at .gpu scope releases this CTA's
// partial, ordered before it by a barrier, and acquires the partials of those counted before).
__device__ __forceinline__ int atom_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
