// What the recurrent-step experiments share (include it after
// lib/Runtime/Cuda/PreloadedPartialsGemm.cu): error checks, random data, the
// early-launch controls, TF32 mma fragments, the register-preloaded K-slice
// product of the runtime's partials GEMM (lib/Runtime/Cuda/PreloadedPartialsGemm.cu)
// in its slice-128 form, and the timing of T steps captured in a CUDA graph.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)

// Deterministic data in [-s/2, s/2), never zero-filled.
__global__ void fill(float *p, size_t n, float s, unsigned seed) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] = s * ((((i + seed) * 2654435761u) % 1000) / 1000.0f - 0.5f);
}
__device__ __forceinline__ float sig(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ void gridWait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void letNextLaunch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
// As rnn-compile's kernels start: let the next grid launch, then wait.
__device__ __forceinline__ void triggerAndWait() { letNextLaunch(); gridWait(); }
__device__ __forceinline__ unsigned tf32(float x) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
__device__ __forceinline__ void mma8(float (&d)[4], const unsigned *w, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]), "r"(b0), "r"(b1)); }

// The slice-128 product of a block of 4 warps: warp w owns the 16 output
// columns n0 .. n0 + 15 (n0 includes 16w) over K = k0 .. k0 + 127, its
// weights in registers as mma A fragments (rows = output columns), A's 64
// rows staged in shared memory (stride kPreloadStride floats).
constexpr int kPreloadSlice = 128, kPreloadStride = kPreloadSlice + 16;
struct PreloadedTile {
  unsigned w[kPreloadSlice / 16][8];
  // Lane (g, t)'s weights of rows n0 + g and n0 + g + 8, rounded to TF32; K
  // permuted within each pair of k-steps (lane t takes k = 4t .. 4t + 3).
  __device__ __forceinline__ void load(const float *weights, size_t ldw, int n0, int k0, int g, int t) {
#pragma unroll
    for (int q = 0; q < kPreloadSlice / 16; ++q) {
      float4 lo = *reinterpret_cast<const float4 *>(weights + (size_t)(n0 + g) * ldw + k0 + 16 * q + 4 * t);
      float4 hi = *reinterpret_cast<const float4 *>(weights + (size_t)(n0 + g + 8) * ldw + k0 + 16 * q + 4 * t);
      w[q][0] = tf32(lo.x); w[q][1] = tf32(hi.x); w[q][2] = tf32(lo.y); w[q][3] = tf32(hi.y);
      w[q][4] = tf32(lo.z); w[q][5] = tf32(hi.z); w[q][6] = tf32(lo.w); w[q][7] = tf32(hi.w);
    }
  }
  // A's 64 rows, columns k0 .. k0 + 127, into `staged` with cp.async (128 threads).
  __device__ __forceinline__ static void stage(float *staged, const float *a, size_t lda, int k0, int tid) {
    for (int v = tid; v < 64 * kPreloadSlice / 4; v += 128) {
      int r = v / (kPreloadSlice / 4), col = 4 * (v % (kPreloadSlice / 4));
      unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(staged + r * kPreloadStride + col));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(addr), "l"(a + (size_t)r * lda + k0 + col));
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
  }
  // acc[j]: rows 8j + 2t and 8j + 2t + 1 of columns n0 + g and n0 + g + 8.
  __device__ __forceinline__ void multiply(float (&acc)[8][4], const float *staged, int g, int t) const {
#pragma unroll
    for (int q = 0; q < kPreloadSlice / 16; ++q)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        float4 bv = *reinterpret_cast<const float4 *>(staged + (8 * j + g) * kPreloadStride + 16 * q + 4 * t);
        mma8(acc[j], w[q], tf32(bv.x), tf32(bv.y));
        mma8(acc[j], w[q] + 4, tf32(bv.z), tf32(bv.w));
      }
  }
};

// A launch with programmatic stream serialization (early launch), as the
// runtime launches our kernels.
template <typename Kernel, typename... Args>
void launchEarly(cudaStream_t s, dim3 grid, dim3 block, size_t smem, Kernel kernel, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute at;
  at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &at;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

// The runtime's partials GEMM (included by the experiment from
// lib/Runtime/Cuda/PreloadedPartialsGemm.cu) over slices of 128: C[s] =
// A[:, 128s ..] · W[:, 128s ..]ᵀ for m rows, n columns, K = 128 · slices.
constexpr size_t kRuntimeSlice128Smem = 64 * kPreloadStride * 4;
inline void runtimePartials128(cudaStream_t s, const float *w, const float *a, int m, int n, int slices, float *c) {
  int64_t ld = 128 * slices, ldc = n;
  launchEarly(s, dim3(n / 64, slices), 128, kRuntimeSlice128Smem, rnn_preloaded_partials_gemm_slice128, a, ld, w, ld, c, ldc, m, n);
}

// `steps` run once directly, then captured into a graph (instantiated and uploaded).
template <typename Steps>
cudaGraphExec_t captureGraph(cudaStream_t s, Steps steps) {
  steps();
  CK(cudaStreamSynchronize(s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  steps();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaGraphDestroy(g);
  CK(cudaGraphUpload(ge, s));
  return ge;
}

// µs per step of `call()` (work for `steps` steps on `s`, launched directly):
// median of 20 calls after 5, timed with events.
template <typename Call>
float usPerStepOf(cudaStream_t s, Call call, int steps) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ts;
  for (int r = 0; r < 25; ++r) {
    cudaEventRecord(e0, s);
    call();
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 5) ts.push_back(ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ts.begin(), ts.end());
  return 1000 * ts[ts.size() / 2] / steps;
}

// µs per step of a graph of `steps` steps.
inline float usPerStep(cudaGraphExec_t ge, cudaStream_t s, int steps) {
  return usPerStepOf(s, [&] { cudaGraphLaunch(ge, s); }, steps);
}

// (max |ref - got|, max |ref|) over n device floats.
inline std::pair<double, double> maxAbsDiff(const float *ref, const float *got, size_t n) {
  std::vector<float> a(n), f(n);
  CK(cudaMemcpy(a.data(), ref, 4 * n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(f.data(), got, 4 * n, cudaMemcpyDeviceToHost));
  double d = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    d = std::max(d, (double)std::fabs(a[i] - f[i]));
    m = std::max(m, (double)std::fabs(a[i]));
  }
  return {d, m};
}
