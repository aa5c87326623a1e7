// Experiment: split-K with the partial sums reduced by the step's own kernel.
//
// cuBLAS runs the [64 x 1024] x [1024 x N] recurrent GEMMs of the two-stage
// cells (MGU, GRU with the reset gate before the matmul) as split-K plus a
// separate reduction kernel: three launches per GEMM and kernel. Here each
// GEMM is instead one strided-batched call over S slices of K writing S
// partial products, and the dependent pointwise kernel adds them up as it
// reads them (two launches). Steps run in a CUDA graph, µs per step; every
// case is run with the pointwise kernels launched in plain stream order and
// with programmatic dependent launch (as the compiler's kernels are).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fillf(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__device__ float sig(float x) { return 1.f / (1.f + __expf(-x)); }
__device__ __forceinline__ void gridWait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ float sumParts(const float *g, size_t idx, int S, size_t stride) { float s = 0; for (int p = 0; p < S; ++p) s += g[idx + p * stride]; return s; }

// First stage of a two-stage cell: gate = sigmoid(g + p). N1 == H (MGU: f)
// or 2H (GRU: r then z). Writes the gate used by the second stage and r*h.
__global__ void stage1(const float *g, int S, const float *p, const float *h, float *gate, float *rh, int M, int H, int N1) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  size_t stride = (size_t)M * N1, row = (size_t)b * N1;
  float a = sig(sumParts(g, row + j, S, stride) + p[row + j]);
  float z = N1 == H ? a : sig(sumParts(g, row + H + j, S, stride) + p[row + H + j]);
  gate[(size_t)b * H + j] = z; rh[(size_t)b * H + j] = a * h[(size_t)b * H + j];
}
// Second stage: h' = (1 - z) h + z tanh(g + p).
__global__ void stage2(const float *g, int S, const float *p, const float *gate, float *h, float *out, int M, int H) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  size_t i = (size_t)b * H + j; float z = gate[i];
  float hn = (1 - z) * h[i] + z * tanhf(sumParts(g, i, S, (size_t)M * H) + p[i]);
  h[i] = hn; out[i] = hn;
}
// One-stage GRU (reset gate after the matmul), gates r, z, n in [M, 3H].
__global__ void gru(const float *g, int S, const float *p, float *h, float *out, int M, int H) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  size_t stride = (size_t)M * 3 * H, row = (size_t)b * 3 * H, i = (size_t)b * H + j;
  float r = sig(sumParts(g, row + j, S, stride) + p[row + j]);
  float z = sig(sumParts(g, row + H + j, S, stride) + p[row + H + j]);
  float n = tanhf(p[row + 2 * H + j] + r * sumParts(g, row + 2 * H + j, S, stride));
  float hn = (1 - z) * n + z * h[i]; h[i] = hn; out[i] = hn;
}

bool pdl = false;
template <typename Kernel, typename... Args> void launch(dim3 grid, cudaStream_t s, Kernel k, Args... args) {
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = dim3(256); cfg.stream = s;
  cudaLaunchAttribute attr; attr.id = cudaLaunchAttributeProgrammaticStreamSerialization; attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr; cfg.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, k, args...));
}

// Adds S partials into C: what a runtime-only split-K (no compiler change) would launch between GEMM and step kernel.
__global__ void reduceParts(const float *g, int S, size_t n, float *c) {
  gridWait();
  size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 4; if (i >= n) return;
  float4 s = make_float4(0, 0, 0, 0);
  for (int p = 0; p < S; ++p) { float4 v = *reinterpret_cast<const float4 *>(g + p * n + i); s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w; }
  *reinterpret_cast<float4 *>(c + i) = s;
}

struct Case { const char *name; int T, M, H, N1; bool twoStage; };
int main() {
  cublasHandle_t hd; CK(cublasCreate(&hd));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  std::vector<Case> cases = {{"mgu medium", 100, 64, 1024, 1024, true}, {"gru_reset_before medium", 100, 64, 1024, 2048, true},
                             {"gru medium", 100, 64, 1024, 3072, false}, {"gru small-latency", 100, 1, 256, 768, false},
                             {"gru wide", 50, 32, 2048, 6144, false}};
  float one = 1, zero = 0;
  for (int mode = 0; mode < 2; ++mode)
  for (auto &c : cases) {
    pdl = mode == 1;
    int H = c.H, M = c.M, K = H, N1 = c.N1, N2 = H;
    size_t maxS = 16;
    float *W1, *W2, *P1, *P2, *G1, *G2, *h, *gate, *rh, *out;
    CK(cudaMalloc(&W1, (size_t)N1 * K * 4)); CK(cudaMalloc(&W2, (size_t)N2 * K * 4));
    CK(cudaMalloc(&P1, (size_t)c.T * M * N1 * 4)); CK(cudaMalloc(&P2, (size_t)c.T * M * N2 * 4));
    CK(cudaMalloc(&G1, maxS * M * N1 * 4)); CK(cudaMalloc(&G2, maxS * M * N2 * 4));
    CK(cudaMalloc(&h, (size_t)M * H * 4)); CK(cudaMalloc(&gate, (size_t)M * H * 4)); CK(cudaMalloc(&rh, (size_t)M * H * 4));
    CK(cudaMalloc(&out, (size_t)c.T * M * H * 4));
    auto fill = [](float *p, size_t n, float sc) { fillf<<<(n + 255) / 256, 256>>>(p, n, sc); };
    fill(W1, (size_t)N1 * K, 0.05f); fill(W2, (size_t)N2 * K, 0.05f); fill(P1, (size_t)c.T * M * N1, 1); fill(P2, (size_t)c.T * M * N2, 1); fill(h, (size_t)M * H, 1);
    CK(cudaDeviceSynchronize());
    // S == 0: cublasGemmEx (cuBLAS's own choice, split-K included); S >= 1: S partials.
    float *Gs; CK(cudaMalloc(&Gs, maxS * M * std::max(N1, N2) * 4));
    auto gemm = [&](const float *W, const float *A, float *C, int N, int S) {
      if (S < 0) {
        int k = K / -S;
        int bad = (int)cublasGemmStridedBatchedEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, N, M, k, &one, W, CUDA_R_32F, K, k, A, CUDA_R_32F, K, k, &zero, Gs, CUDA_R_32F, N, (long long)M * N, -S, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
        size_t n = (size_t)M * N;
        launch(dim3((n / 4 + 255) / 256), s, reduceParts, (const float *)Gs, -S, n, C);
        return bad;
      }
      if (S == 0) return (int)cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, A, CUDA_R_32F, K, &zero, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
      int k = K / S;
      return (int)cublasGemmStridedBatchedEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, N, M, k, &one, W, CUDA_R_32F, K, k, A, CUDA_R_32F, K, k, &zero, C, CUDA_R_32F, N, (long long)M * N, S, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    };
    dim3 grid((H + 255) / 256, M);
    auto fwd = [&](int S1, int S2) {
      int bad = 0;
      for (int t = 0; t < c.T; ++t) {
        float *o = out + (size_t)t * M * H;
        bad |= gemm(W1, h, G1, N1, S1);
        if (c.twoStage) {
          launch(grid, s, stage1, (const float *)G1, std::max(S1, 1), P1 + (size_t)t * M * N1, (const float *)h, gate, rh, M, H, N1);
          bad |= gemm(W2, rh, G2, N2, S2);
          launch(grid, s, stage2, (const float *)G2, std::max(S2, 1), P2 + (size_t)t * M * N2, (const float *)gate, h, o, M, H);
        } else {
          launch(grid, s, gru, (const float *)G1, std::max(S1, 1), P1 + (size_t)t * M * N1, h, o, M, H);
        }
      }
      return bad;
    };
    auto timeIt = [&](int S1, int S2) -> float {
      if (fwd(S1, S2) || cudaStreamSynchronize(s)) return -1;
      cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); int bad = fwd(S1, S2); CK(cudaStreamEndCapture(s, &g));
      if (bad) { cudaGraphDestroy(g); return -1; }
      cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
      for (int r = 0; r < 15; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) ts.push_back(ms); }
      std::sort(ts.begin(), ts.end());
      cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaEventDestroy(e0); cudaEventDestroy(e1);
      return 1000 * ts[ts.size() / 2] / c.T;
    };
    // The result of the last step must not depend on the split (TF32 sums in a different order: loose check).
    auto result = [&](int S1, int S2) { fill(h, (size_t)M * H, 1); CK(cudaDeviceSynchronize()); fwd(S1, S2); CK(cudaStreamSynchronize(s)); std::vector<float> v((size_t)M * H); CK(cudaMemcpy(v.data(), h, v.size() * 4, cudaMemcpyDeviceToHost)); return v; };
    std::vector<float> ref = result(0, 0);
    printf("%s%-24s M%3d H%5d N1 %5d: cuBLAS GemmEx %.2f us/step; partials:", pdl ? "PDL   " : "plain ", c.name, M, H, N1, timeIt(0, 0));
    for (int S : {1, 2, 4, 8, 16}) {
      if (K % S) continue;
      std::vector<float> v = result(S, S); double md = 0; for (size_t i = 0; i < v.size(); ++i) md = std::max(md, (double)fabsf(v[i] - ref[i]));
      printf(" S%d %.2f (maxdiff %.1e)", S, timeIt(S, S), md);
    }
    for (int S : {4, 8}) printf(" S%d+reduce kernel %.2f", S, timeIt(-S, -S));
    if (c.twoStage) for (int S1 : {2, 4, 8}) for (int S2 : {2, 4, 8}) if (S1 != S2) printf(" S%d/%d %.2f", S1, S2, timeIt(S1, S2));
    printf("\n");
    for (float *p : {W1, W2, P1, P2, G1, G2, Gs, h, gate, rh, out}) cudaFree(p);
  }
  return 0;
}
