// ---- device helpers of the swapped (A and B) decode kernels (verbatim) -----------------------------------
// One bf16 into the transposed D tile: a thread's two values of a row pair are adjacent tokens, i.e. D rows apart.
__device__ __forceinline__ void st_shared_u16(u32 addr, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;" :: "r"(addr), "h"(v) : "memory");
}
