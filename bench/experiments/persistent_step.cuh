// What the persistent-recurrence experiments share: a grid-wide step barrier
// on a counter every block adds to, mbarrier waits, bulk copies of h's rows
// multicast to the blocks of a cluster, and a per-phase time probe.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__device__ __forceinline__ unsigned smem32(const void *p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void copy16(void *dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem32(dst)), "l"(src));
}
__device__ __forceinline__ unsigned long long nowNs() { unsigned long long v; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v)); return v; }

// Thread 0 waits until `counter` reaches `target` (wrap-safe), then the block.
__device__ __forceinline__ void waitForCount(const unsigned *counter, unsigned target) {
  if (threadIdx.x == 0) {
    unsigned now;
    do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(counter)); } while ((int)(now - target) < 0);
  }
  __syncthreads();
}
// After a __syncthreads that follows the block's writes: count the block in.
__device__ __forceinline__ void releaseStep(unsigned *counter) {
  if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
}

__device__ __forceinline__ void initBarrier(unsigned long long *bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem32(bar)));
}
__device__ __forceinline__ void expectBytes(unsigned long long *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void waitPhase(unsigned long long *bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(smem32(bar)), "r"(parity) : "memory");
}
// `bytes` from global `src` to `dst` in every block of the cluster in `mask`,
// completing on the mbarrier at `bar`'s offset in each.
__device__ __forceinline__ void multicastCopy(void *dst, const void *src, unsigned bytes, unsigned long long *bar, unsigned short mask) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
               ::"r"(smem32(dst)), "l"(src), "r"(bytes), "r"(smem32(bar)), "h"(mask) : "memory");
}
// The cluster's mbarriers are initialised (by thread 0 of each block) before any block multicasts.
__device__ __forceinline__ void clusterSync() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned clusterRank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
// d += a · b for mma.m16n8k16 with bf16 operands and f32 sums.
__device__ __forceinline__ void mmaBf16(float (&d)[4], const unsigned *a, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__global__ void toBf16(const float *src, __nv_bfloat16 *dst, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) dst[i] = __float2bfloat16(src[i]);
}
