// Experiment: split the recurrent GEMM's weight rows into P parts and
// alternate their order step to step, so the parts read last in one step are
// still in L2 at the start of the next.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fillf(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__global__ void fillb(__nv_bfloat16 *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = __float2bfloat16(s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f)); }
template <typename T> __global__ void step(const float *g, T *h, int M, int N, int K) {
  int k = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y; if (k >= K) return;
  float s = 0; for (int j = k; j < N; j += K) s += g[(size_t)m * N + j];
  float v = tanhf(s); if constexpr (sizeof(T) == 2) h[(size_t)m * K + k] = __float2bfloat16(v); else h[(size_t)m * K + k] = v;
}
struct Case { const char *name; int m, n, k, steps; bool bf16; };
int main() {
  cublasHandle_t h; CK(cublasCreate(&h));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(h, s));
  std::vector<Case> cases = {{"wide lstm", 32, 8192, 2048, 50, false}, {"wide gru", 32, 6144, 2048, 50, false}, {"wide lstm bf16", 32, 8192, 2048, 50, true}, {"medium lstm", 64, 4096, 1024, 100, false}};
  for (auto &c : cases) {
    size_t esz = c.bf16 ? 2 : 4; size_t nw = (size_t)c.n * c.k, na = (size_t)c.m * c.k, ng = (size_t)c.steps * c.m * c.n;
    void *W, *A; float *G;
    CK(cudaMalloc(&W, nw * esz)); CK(cudaMalloc(&A, na * esz)); CK(cudaMalloc(&G, ng * 4));
    if (c.bf16) { fillb<<<(nw + 255) / 256, 256>>>((__nv_bfloat16 *)W, nw, 0.05f); fillb<<<(na + 255) / 256, 256>>>((__nv_bfloat16 *)A, na, 1.f); }
    else { fillf<<<(nw + 255) / 256, 256>>>((float *)W, nw, 0.05f); fillf<<<(na + 255) / 256, 256>>>((float *)A, na, 1.f); }
    fillf<<<(ng + 255) / 256, 256>>>(G, ng, 1.f); CK(cudaDeviceSynchronize());
    auto dt = c.bf16 ? CUDA_R_16BF : CUDA_R_32F; auto comp = c.bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    float one = 1;
    for (int parts : {1, 2, 3, 4, 8}) for (int alt = 0; alt < 2; ++alt) {
      if (parts == 1 && alt) continue;
      int np = c.n / parts;
      auto fwd = [&]() { for (int t = 0; t < c.steps; ++t) { float *gt = G + (size_t)t * c.m * c.n;
          for (int q = 0; q < parts; ++q) { int p = (alt && (t & 1)) ? parts - 1 - q : q;
            CK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, np, c.m, c.k, &one, (char *)W + (size_t)p * np * c.k * esz, dt, c.k, A, dt, c.k, &one, gt + (size_t)p * np, CUDA_R_32F, c.n, comp, CUBLAS_GEMM_DEFAULT)); }
          dim3 grid((c.k + 255) / 256, c.m); if (c.bf16) step<<<grid, 256, 0, s>>>(gt, (__nv_bfloat16 *)A, c.m, c.n, c.k); else step<<<grid, 256, 0, s>>>(gt, (float *)A, c.m, c.n, c.k); } };
      fwd(); CK(cudaStreamSynchronize(s));
      cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); fwd(); CK(cudaStreamEndCapture(s, &g));
      cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
      for (int r = 0; r < 15; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) ts.push_back(ms); }
      std::sort(ts.begin(), ts.end());
      printf("%-16s parts %d %s: %.2f us/step\n", c.name, parts, alt ? "alternating" : "same order ", 1000 * ts[ts.size() / 2] / c.steps);
      cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
    }
    cudaFree(W); cudaFree(A); cudaFree(G);
  }
}
