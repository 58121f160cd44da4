// The MoE layer's row kernels (gemmgen/runtime/rows.py): dispatch's cast-and-place and combine's weighted gather.
// Plain CUDA (no Jinja): sizes and strides are run-time arguments, so one compile serves every layer.
typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ float bf16_to_float(unsigned short h) { return __uint_as_float(static_cast<u32>(h) << 16); }

template <typename T> __device__ __forceinline__ void load8(const T* p, float (&v)[8]);
template <> __device__ __forceinline__ void load8<unsigned short>(const unsigned short* p, float (&v)[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);  // 8 bf16, one 16-byte load
  const u32 w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = bf16_to_float(static_cast<unsigned short>(w[i] & 0xffffu));
    v[2 * i + 1] = bf16_to_float(static_cast<unsigned short>(w[i] >> 16));
  }
}
template <> __device__ __forceinline__ void load8<float>(const float* p, float (&v)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

__device__ __forceinline__ unsigned short e4m3x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

// Row r of the FP8 operand = per_token_cast_to_fp8 of x[src[r]] (src[r] < 0: a zero row with scales 0): each
// 128-column group's amax (over 16 lanes of 8 values), scale = max(amax, 1e-4) x fp32(1/448) (torch's CUDA division by
// a scalar), value / scale (IEEE division) saturated to e4m3; a group holding NaN or inf: scale NaN, values 0.
// One 256-thread block per row, 2048 columns per step; cols % 8 == 0 and 16-byte aligned rows (rows.py checks).
// The scales of row r sit at (r / group_rows) * s_stride_g + (r % group_rows) * s_row + (column / 128) * s_group: a
// masked layout's [G, M_max, K/128] scales (TMA layout: groups stacked), or one group.
template <typename T>
__device__ __forceinline__ void cast_rows(const T* x, long long x_ld, const long long* src, int cols,
                                          unsigned char* q, long long q_ld, float* s, long long s_row,
                                          long long s_group, long long group_rows, long long s_stride_g) {
  const long long r = blockIdx.x;
  const long long t = src[r];
  float* s_r = s + (r / group_rows) * s_stride_g + (r % group_rows) * s_row;
  for (int c0 = 0; c0 < cols; c0 += 2048) {
    const int col = c0 + static_cast<int>(threadIdx.x) * 8;
    float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (t >= 0 && col < cols) load8<T>(x + t * x_ld + col, v);
    float amax = 0.f;
    bool finite = true;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      finite = finite && isfinite(v[i]);
      amax = fmaxf(amax, fabsf(v[i]));
    }
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) {  // the 16 lanes of one 128-column group
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
      finite = __shfl_xor_sync(0xffffffffu, static_cast<int>(finite), o) && finite;
    }
    const float scale = finite ? fmaxf(amax, 1e-4f) * (1.f / 448.f) : __int_as_float(0x7fffffff);
    if (col < cols) {
      u32 w[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float a = finite ? __fdiv_rn(v[4 * i], scale) : 0.f, b = finite ? __fdiv_rn(v[4 * i + 1], scale) : 0.f;
        const float c = finite ? __fdiv_rn(v[4 * i + 2], scale) : 0.f, d = finite ? __fdiv_rn(v[4 * i + 3], scale) : 0.f;
        w[i] = static_cast<u32>(e4m3x2(a, b)) | (static_cast<u32>(e4m3x2(c, d)) << 16);
      }
      *reinterpret_cast<uint2*>(q + r * q_ld + col) = make_uint2(w[0], w[1]);
      if (threadIdx.x % 16 == 0) s_r[(col / 128) * s_group] = t >= 0 ? scale : 0.f;
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) moe_cast_rows_bf16(
    const unsigned short* x, long long x_ld, const long long* src, int cols, unsigned char* q, long long q_ld,
    float* s, long long s_row, long long s_group, long long group_rows, long long s_stride_g) {
  cast_rows<unsigned short>(x, x_ld, src, cols, q, q_ld, s, s_row, s_group, group_rows, s_stride_g);
}

extern "C" __global__ void __launch_bounds__(256) moe_cast_rows_f32(
    const float* x, long long x_ld, const long long* src, int cols, unsigned char* q, long long q_ld, float* s,
    long long s_row, long long s_group, long long group_rows, long long s_stride_g) {
  cast_rows<float>(x, x_ld, src, cols, q, q_ld, s, s_row, s_group, group_rows, s_stride_g);
}

// out[t] = sum_j w[t, j] * y[rows[t, j]] in fp32 (rows outside [0, y_rows) add nothing), rounded to bf16 once. One 256-thread block
// per token, 8 columns per thread per step; y's and out's rows 16-byte aligned, cols % 8 == 0 (rows.py checks).
extern "C" __global__ void __launch_bounds__(256) moe_combine_bf16(
    const unsigned short* y, long long y_ld, long long y_rows, const long long* rows, const float* w, int k,
    int cols, unsigned short* out, long long out_ld) {
  const long long t = blockIdx.x;
  for (int c0 = 0; c0 < cols; c0 += 2048) {
    const int col = c0 + static_cast<int>(threadIdx.x) * 8;
    if (col >= cols) continue;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int j = 0; j < k; ++j) {
      const long long r = rows[t * k + j];
      if (r < 0 || r >= y_rows) continue;
      const float wj = w[t * k + j];
      float v[8];
      load8<unsigned short>(y + r * y_ld + col, v);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = fmaf(wj, v[i], acc[i]);
    }
    u32 packed[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed[i]) : "f"(acc[2 * i + 1]), "f"(acc[2 * i]));
    *reinterpret_cast<uint4*>(out + t * out_ld + col) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
}
