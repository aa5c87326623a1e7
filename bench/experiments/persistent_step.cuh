// What the persistent-recurrence experiments (and the bf16 per-step paths they
// are compared with) share: a grid-wide step barrier
// on a counter every block adds to, mbarrier waits, bulk copies of h's rows
// multicast to the blocks of a cluster, and a per-phase time probe.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <vector>

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
// Lane (g, t)'s mma.m16n8k16 A fragments over kSteps k16 steps of a 16-row
// bf16 tile whose rows g and g + 8 start at `lo` and `hi`: a0 (row g, k 2t),
// a1 (row g + 8), a2 (row g, k 2t + 8), a3 (row g + 8, k 2t + 8).
template <int kSteps>
__device__ __forceinline__ void loadFragmentsBf16(unsigned (&wr)[kSteps][4], const __nv_bfloat16 *lo, const __nv_bfloat16 *hi, int t) {
  const unsigned *l = reinterpret_cast<const unsigned *>(lo), *h = reinterpret_cast<const unsigned *>(hi);
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
    wr[kk][0] = l[8 * kk + t]; wr[kk][1] = h[8 * kk + t]; wr[kk][2] = l[8 * kk + t + 4]; wr[kk][3] = h[8 * kk + t + 4];
  }
}

// d += a · b for mma.m16n8k16 with bf16 operands and f32 sums.
__device__ __forceinline__ void mmaBf16(float (&d)[4], const unsigned *a, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__global__ void toBf16(const float *src, __nv_bfloat16 *dst, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) dst[i] = __float2bfloat16(src[i]);
}

// A cuBLAS handle on a new non-blocking stream, with a 32 MiB workspace.
struct CublasStream {
  cublasHandle_t handle;
  cudaStream_t stream;
};
inline CublasStream cublasOnNewStream() {
  CublasStream c;
  CK(cublasCreate(&c.handle));
  CK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  CK(cublasSetStream(c.handle, c.stream));
  void *workspace;
  CK(cudaMalloc(&workspace, 32 << 20));
  CK(cublasSetWorkspace(c.handle, workspace, 32 << 20));
  return c;
}

// The per-step path's recurrent product with cuBLAS: out[m][n] = sum over k
// of h[m][k] u[n][k], bf16 operands, f32 sums and result.
inline void recurrentGemmBf16(cublasHandle_t handle, const __nv_bfloat16 *u, const __nv_bfloat16 *h, int m, int n, int k, float *out) {
  const float one = 1, zero = 0;
  CK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, u, CUDA_R_16BF, k, h, CUDA_R_16BF, k, &zero, out, CUDA_R_32F, n,
                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The bf16 GRU's pointwise step (torch.nn.GRU) over `slices` partials
// [slices][B][3H] of U h: x is the step's projection [B][3H] (b_hr, b_hz
// folded in), h' written to hNext and y.
template <int B, int H>
__global__ void gruBf16Step(const float *gh, int slices, const float *x, const float *bhn, const __nv_bfloat16 *hPrev,
                            __nv_bfloat16 *hNext, __nv_bfloat16 *y) {
  constexpr int G = 3 * H;
  triggerAndWait();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= B * H) return;
  int b = i / H, j = i % H;
  float sr = 0, sz = 0, sn = 0;
  for (int s = 0; s < slices; ++s) {
    const float *q = gh + (size_t)s * B * G + (size_t)b * G;
    sr += q[j]; sz += q[H + j]; sn += q[2 * H + j];
  }
  float r = sig(x[b * G + j] + sr), z = sig(x[b * G + H + j] + sz);
  float n = tanhf(x[b * G + 2 * H + j] + r * (sn + bhn[j]));
  float h = __bfloat162float(hPrev[i]);
  __nv_bfloat16 out = __float2bfloat16((1 - z) * n + z * h);
  hNext[i] = out;
  y[i] = out;
}

// Two device bf16 arrays of n values compared: the largest |a - b|, the
// largest |a|, and how many values differ.
struct Bf16Difference {
  double maxAbsDiff = 0, maxAbs = 0;
  size_t differing = 0;
};
inline Bf16Difference compareBf16(const __nv_bfloat16 *a, const __nv_bfloat16 *b, size_t n) {
  std::vector<__nv_bfloat16> ha(n), hb(n);
  CK(cudaMemcpy(ha.data(), a, 2 * n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hb.data(), b, 2 * n, cudaMemcpyDeviceToHost));
  Bf16Difference d;
  for (size_t i = 0; i < n; ++i) {
    double x = __bfloat162float(ha[i]), y = __bfloat162float(hb[i]);
    d.maxAbsDiff = std::max(d.maxAbsDiff, std::fabs(x - y));
    d.maxAbs = std::max(d.maxAbs, std::fabs(x));
    d.differing += x != y;
  }
  return d;
}
