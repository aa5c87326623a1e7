// Experiment: the two-stage cells' K-split partial products (one strided-
// batched GEMM over K slices per phase, summed by the step's kernel) with
// cublasGemmStridedBatchedEx's choice against every cuBLASLt heuristic
// candidate for the same batched product, in a CUDA graph of T steps of two
// phases (GEMM + a kernel that sums the partials and writes the next phase's
// A), kernels launched in plain stream order. µs per step, median of 12.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/partials_algos.cu -lcublasLt -lcublas -o build/exp/partials_algos
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fill(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }
// a[m, j] = tanh(x[m, j] + sum_s p[s, m, j]) for j < K (the next phase's A), from partials of width N.
__global__ void phase(const float *p, const float *x, float *a, int M, int N, int K, int S) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= M * K) return;
  int m = i / K, j = i % K; float s = x[i];
  for (int k = 0; k < S; ++k) s += p[(size_t)k * M * N + (size_t)m * N + j];
  a[i] = tanhf(s);
}
struct Phase { int n, slices; };
struct Lt { cublasLtMatmulDesc_t desc; cublasLtMatrixLayout_t la, lb, lc; std::vector<cublasLtMatmulHeuristicResult_t> algos; };
int main() {
  const int M = 64, K = 1024, T = 100;
  cublasHandle_t h; CK(cublasCreate(&h)); cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(h, s));
  size_t wsBytes = 32 << 20; void *ws; CK(cudaMalloc(&ws, wsBytes)); CK(cublasSetWorkspace(h, ws, wsBytes));
  struct Case { const char *name; Phase p[2]; };
  std::vector<Case> cases = {{"mgu", {{1024, 8}, {1024, 8}}}, {"gru_reset_before", {{2048, 4}, {1024, 8}}},
                             {"gru_reset_before S=8", {{2048, 8}, {1024, 8}}}};
  float one = 1, zero = 0;
  for (auto &c : cases) {
    float *W[2], *P[2], *X, *A; CK(cudaMalloc(&X, 4 * M * K)); CK(cudaMalloc(&A, 4 * M * K));
    fill<<<M * K / 256, 256>>>(X, M * K, 1.f); fill<<<M * K / 256, 256>>>(A, M * K, 1.f);
    Lt lts[2];
    for (int q = 0; q < 2; ++q) {
      int n = c.p[q].n, S = c.p[q].slices, sl = K / S;
      CK(cudaMalloc(&W[q], 4 * (size_t)n * K)); CK(cudaMalloc(&P[q], 4 * (size_t)S * M * n));
      fill<<<(n * K + 255) / 256, 256>>>(W[q], (size_t)n * K, 0.05f);
      Lt &L = lts[q]; auto comp = CUBLAS_COMPUTE_32F_FAST_TF32; cublasOperation_t opT = CUBLAS_OP_T;
      CK(cublasLtMatmulDescCreate(&L.desc, comp, CUDA_R_32F));
      CK(cublasLtMatmulDescSetAttribute(L.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT)));
      CK(cublasLtMatrixLayoutCreate(&L.la, CUDA_R_32F, sl, n, K)); CK(cublasLtMatrixLayoutCreate(&L.lb, CUDA_R_32F, sl, M, K));
      CK(cublasLtMatrixLayoutCreate(&L.lc, CUDA_R_32F, n, M, n));
      int32_t bc = S; int64_t sa = sl, sb = sl, sc = (int64_t)M * n;
      for (auto l : {L.la, L.lb, L.lc}) CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
      CK(cublasLtMatrixLayoutSetAttribute(L.la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof(sa)));
      CK(cublasLtMatrixLayoutSetAttribute(L.lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof(sb)));
      CK(cublasLtMatrixLayoutSetAttribute(L.lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc, sizeof(sc)));
      cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
      CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes)));
      cublasLtMatmulHeuristicResult_t res[32]; int nres = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, L.desc, L.la, L.lb, L.lc, L.lc, pref, 32, res, &nres));
      L.algos.assign(res, res + nres);
    }
    CK(cudaDeviceSynchronize());
    // choice[q] = -1: cublasGemmStridedBatchedEx; else the heuristic's index.
    auto gemm = [&](int q, int choice) {
      int n = c.p[q].n, S = c.p[q].slices, sl = K / S;
      if (choice < 0)
        return (int)cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, M, sl, &one, W[q], CUDA_R_32F, K, sl, A, CUDA_R_32F, K, sl,
                                               &zero, P[q], CUDA_R_32F, n, (long long)M * n, S, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
      Lt &L = lts[q]; auto &r = L.algos[choice];
      if (r.workspaceSize > wsBytes) return 1;
      return (int)cublasLtMatmul(lt, L.desc, &one, W[q], L.la, A, L.lb, &zero, P[q], L.lc, P[q], L.lc, &r.algo, ws, r.workspaceSize, s);
    };
    auto time = [&](int c0, int c1) -> float {
      auto fwd = [&]() { int bad = 0; for (int t = 0; t < T; ++t) for (int q = 0; q < 2; ++q) {
          bad |= gemm(q, q ? c1 : c0); phase<<<M * K / 256, 256, 0, s>>>(P[q], X, A, M, c.p[q].n, K, c.p[q].slices); } return bad; };
      if (fwd()) { cudaStreamSynchronize(s); return -1; }
      CK(cudaStreamSynchronize(s));
      cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); int bad = fwd(); CK(cudaStreamEndCapture(s, &g));
      if (bad) { cudaGraphDestroy(g); return -1; }
      cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
      for (int r = 0; r < 15; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) ts.push_back(ms); }
      std::sort(ts.begin(), ts.end()); cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaEventDestroy(e0); cudaEventDestroy(e1);
      return 1000 * ts[ts.size() / 2] / T;
    };
    float base = time(-1, -1);
    printf("%-22s default (cublasGemmStridedBatchedEx) %.2f us/step; %zu / %zu candidates\n", c.name, base, lts[0].algos.size(), lts[1].algos.size());
    int best0 = -1; float b0 = base;
    for (int i = 0; i < (int)lts[0].algos.size(); ++i) { float u = time(i, -1); printf("   phase 1 candidate %2d: %.2f\n", i, u); if (u > 0 && u < b0) { b0 = u; best0 = i; } }
    int best1 = -1; float b1 = b0;
    for (int i = 0; i < (int)lts[1].algos.size(); ++i) { float u = time(best0, i); printf("   phase 2 candidate %2d: %.2f\n", i, u); if (u > 0 && u < b1) { b1 = u; best1 = i; } }
    printf("%-22s best: phase 1 candidate %d, phase 2 candidate %d: %.2f us/step (default %.2f; again %.2f / %.2f)\n", c.name, best0, best1, b1, base, time(-1, -1), time(best0, best1));
    for (int q = 0; q < 2; ++q) { cudaFree(W[q]); cudaFree(P[q]); }
    cudaFree(X); cudaFree(A);
  }
  return 0;
}
