// ---- device helpers (verbatim, shared by every gemmgen kernel) -------------------------------------------
// NVRTC ships no headers and cannot include cuda.h: CUtensorMap is 128 opaque bytes, 64-byte aligned
// (CUDA driver API, CUtensorMap). Everything below is inline PTX; sections cite the PTX ISA.

struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
typedef CUtensorMap_st CUtensorMap;

typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// mbarrier (PTX ISA 9.7.13.15) -----------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
// Arrive on the barrier at the same shared-memory offset in CTA `cta` of this cluster. Default semantics
// (.release.cta), as CUTLASS's ClusterBarrier::arrive(cta_id): an explicit .release.cluster costs a
// MEMBAR.ALL.GPU per k-block (seen in our SASS), and the slot's readers are wgmma/ld.shared already complete.
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" :: "r"(bar), "r"(cta) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" :: "r"(bar), "r"(parity) : "memory");
}

// cp.async (PTX ISA 9.7.9.3): a 4-byte global -> shared copy; `inside` false copies 0 bytes and zero-fills.
__device__ __forceinline__ void cp_async_f32(u32 dst, const float* src, bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
               :: "r"(dst), "l"(src), "r"(inside ? 4 : 0) : "memory");
}
// A 16-byte global -> shared copy of which the first `bytes` (0..16) are read and the rest zero-filled.
__device__ __forceinline__ void cp_async_16(u32 dst, const float* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
// Arrive on `bar` once every cp.async this thread issued before has completed; .noinc: the arrival is one of the
// count the barrier was initialised with (PTX ISA 9.7.9.4 cp.async.mbarrier.arrive).
__device__ __forceinline__ void cp_async_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(bar) : "memory");
}

// threadIdx.y, read where it is used: 0 in the kernel's 1-D blocks, but ptxas cannot fold it, so `bits &
// run_time_zero()` makes an instruction depend on the loads behind `bits` (consumer.cu.j2, release: a slot's
// release follows its B scales' loads). A special register read per use costs no register across the main loop.
__device__ __forceinline__ u32 run_time_zero() {
  u32 z;
  asm volatile("mov.u32 %0, %%tid.y;" : "=r"(z));
  return z;
}

// Wait for every cp.async this thread issued: a gather thread runs it before it exits, so no copy is in flight
// past its thread's end (defensive: the intermittent wgrad difference it was first suspected of had another
// cause, the column-scale release in consumer.cu.j2; bench/NOTES.md v0.7).
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// TMA (PTX ISA 9.7.9.25 cp.async.bulk.tensor) --------------------------------------------------------------
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<u64>(map)) : "memory");
}
__device__ __forceinline__ void tma_load_2d(u32 dst, const CUtensorMap* map, u32 bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      :: "r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(bar), "r"(c0), "r"(c1) : "memory");
}
// The same load with an L2 cache-eviction policy (the .L2::cache_hint form; the policy from createpolicy).
__device__ __forceinline__ void tma_load_2d_hint(u32 dst, const CUtensorMap* map, u32 bar, int c0, int c1, u64 policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5;"
      :: "r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(bar), "r"(c0), "r"(c1), "l"(policy) : "memory");
}
// An L2 policy marking every line it loads first to evict (PTX ISA createpolicy, fraction 1.0): bytes read once.
__device__ __forceinline__ u64 l2_evict_first_policy() {
  u64 policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
// Same box written to the same offset in every CTA of `mask`; each CTA's barrier at `bar`'s offset is signalled.
__device__ __forceinline__ void tma_load_2d_multicast(u32 dst, const CUtensorMap* map, u32 bar, int c0, int c1,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;"
      :: "r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(mask) : "memory");
}
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, u32 src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
               :: "l"(reinterpret_cast<u64>(map)), "r"(src), "r"(c0), "r"(c1) : "memory");
}
// The same box added into global memory (the tensor map's type, here fp32; PTX ISA 9.7.9.27
// cp.reduce.async.bulk.tensor, .add): D += the staged tile, element-wise, by the TMA unit.
__device__ __forceinline__ void tma_reduce_add_2d(const CUtensorMap* map, u32 src, int c0, int c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];"
               :: "l"(reinterpret_cast<u64>(map)), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Wait until the shared memory of every committed store has been read (it may be overwritten then).
__device__ __forceinline__ void bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }

// Fences and barriers --------------------------------------------------------------------------------------
// Generic-proxy smem writes (st.shared) must be fenced before the async proxy (TMA store) reads them
// (PTX ISA 9.7.13.4 membar/fence, proxy fences).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void named_barrier_sync(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}
// A named barrier that also ANDs a predicate over its threads (PTX ISA 9.7.13.1, bar.red.and.pred).
__device__ __forceinline__ bool named_barrier_and(u32 id, u32 threads, bool pred) {
  u32 all;
  asm volatile(
      "{\n"
      ".reg .pred p, q;\n"
      "setp.ne.u32 p, %1, 0;\n"
      "bar.red.and.pred q, %2, %3, p;\n"
      "selp.u32 %0, 1, 0, q;\n"
      "}\n" : "=r"(all) : "r"(static_cast<u32>(pred)), "r"(id), "r"(threads) : "memory");
  return all != 0;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
__device__ __forceinline__ u32 cluster_cta_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Split-K hand-over through distributed shared memory (PTX ISA 9.7.13.15 mbarrier, 9.7.9.? mapa, 9.7.12.4 fence):
// the writer's stores are ordered before its remote arrive by a cluster-scope fence, the reader's loads after its
// wait by acquire.cluster.
__device__ __forceinline__ void fence_acq_rel_cluster() { asm volatile("fence.acq_rel.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_wait_cluster(u32 bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" :: "r"(bar), "r"(parity) : "memory");
}
// Remote arrive with cluster-scope release (the split-K hand-over; once per tile, so its cost does not matter).
__device__ __forceinline__ void mbar_arrive_cluster_release(u32 bar, u32 cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
      "}\n" :: "r"(bar), "r"(cta) : "memory");
}
__device__ __forceinline__ u32 map_to_rank(u32 addr, u32 cta) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(cta));
  return remote;
}
__device__ __forceinline__ void st_shared_v4(u32 addr, float a, float b, float c, float d) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
__device__ __forceinline__ float4 ld_shared_cluster_v4(u32 addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
  return v;
}

// wgmma (PTX ISA 9.7.15) -----------------------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Wait until at most N committed wgmma groups of this warpgroup are still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
// Keeps the compiler from moving reads/writes of an accumulator register across the asynchronous wgmma
// (the asm "defines" the register at this point; CUTLASS's warpgroup_fence_operand does the same).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r) :: "memory"); }

// Shared-memory matrix descriptor, K-major operand with the 128-byte swizzle: rows of 128 B, 8-row core-matrix
// groups 1024 B apart (SBO), LBO unused, layout type 1 = SWIZZLE_128B (PTX ISA 9.7.15.5.1.1, Table "matrix
// descriptor"). Verified on the H200 by the GPU tests (tests/test_gpu_gemm.py).
__device__ __forceinline__ u64 make_desc_sw128(u32 saddr) {
  u64 d = 0;
  d |= (u64)((saddr & 0x3FFFF) >> 4);
  d |= (u64)1 << 16;
  d |= (u64)(1024 >> 4) << 32;
  d |= (u64)1 << 62;
  return d;
}

// Ring stage `stage`'s descriptor from stage 0's: shared addresses are < 256 KiB, so the 14-bit start-address
// field never carries, and a stage only moves it: one add on the low word after the slot wait, where rebuilding
// the descriptor from the address was a chain of five uniform ops between the wait and the first wgmma.
__device__ __forceinline__ u64 desc_of_stage(u64 desc0, u32 stage, u32 stage_bytes) {
  const u32 lo = static_cast<u32>(desc0) + stage * (stage_bytes >> 4);
  return (desc0 & 0xFFFFFFFF00000000ull) | lo;
}

__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ void st_shared_v2_f32(u32 addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(addr), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_f32(u32 addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;" :: "r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ float ld_shared_f32(u32 addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
// ---- end of device helpers -------------------------------------------------------------------------------
