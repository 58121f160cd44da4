// ---- device helpers of the fused epilogues (SwiGLU, e4m3 D with its 1x128 scales) -----------------------------
// Two fp32 -> one e4m3 pair, saturating to +-448 (NaN stays NaN); lo lands in the low byte (the lower column).
__device__ __forceinline__ unsigned short pack_e4m3x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
// max that propagates NaN (PTX max.NaN, sm_80+): a NaN anywhere in a 128-column group makes its amax NaN.
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// The value a bf16 D would hold (round to nearest even): the FP8 scales are taken from it, as
// per_token_cast_to_fp8 of the bf16 result would take them.
__device__ __forceinline__ float round_bf16(float x) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return __uint_as_float(static_cast<u32>(h) << 16);
}
// x / s rounded to nearest as an IEEE fp32 division would, without div.rn's slow-path call (a CALL per value made the
// FP8 epilogue spill): in double, s's reciprocal from rcp.approx plus two Newton steps and one product are within
// 2^-51 of x / s, while a bf16 x over an fp32 s is never within 2^-49 of a midpoint between fp32 values (x has 8
// significant bits, s 24, a midpoint 25 odd ones), so rounding the double gives the correctly rounded quotient.
__device__ __forceinline__ double rcp_f64(double s) {
  double y;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(s));
  y = fma(fma(-s, y, 1.0), y, y);
  return fma(fma(-s, y, 1.0), y, y);
}
__device__ __forceinline__ float div_rn_by(float x, double inv_s) {
  return __double2float_rn(static_cast<double>(x) * inv_s);
}
// SiLU(g) = g * sigmoid(g) = g / (1 + e^-g): fast exp and division (relative error ~1e-6; g -> -inf gives -0).
__device__ __forceinline__ float silu(float g) { return __fdividef(g, 1.f + __expf(-g)); }
__device__ __forceinline__ void st_shared_u16(u32 addr, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;" :: "r"(addr), "h"(v) : "memory");
}
