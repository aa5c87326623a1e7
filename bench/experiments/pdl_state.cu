// Experiment (see bench/experiments/README.md): in a standalone program, does
// programmatic dependent launch in a graph stop paying once other cuBLAS work
// has run in the process (as it does for our models under PyTorch)?
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/pdl_state.cu -lcublas -o build/exp/pdl_state
// Run: build/exp/pdl_state TRIGGER [UNDO]  (TRIGGER: none malloc kernel-other-stream sgemm-same-handle
// sgemm-same-stream sgemm-other-stream pdl-direct-other-stream pdl-direct-same-stream
// plain-direct-other-stream plain-direct-same-stream gemms-other-stream cluster-kernel-other-stream
// cluster-kernel-same-stream cluster-kernel-legacy-stream fills-other-stream;
// UNDO, tried after it: destroy-stream upload carveout-0 carveout-100 cache-prefer-l1
// cache-prefer-shared l2-reset stack-limit graph-mem-trim launch-on-trigger-stream launch-on-legacy-stream
// plain-fills-same-stream)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fill(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__global__ void phase(const float *p, const float *x, float *a, int M, int N, int K, int S) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= M * K) return;
  int m = i / K, j = i % K; float s = x[i];
  for (int k = 0; k < S; ++k) s += p[(size_t)k * M * N + (size_t)m * N + j];
  a[i] = tanhf(s);
}
int main(int argc, char **argv) {
  const int M = 64, K = 1024, N = 1024, S = 8, T = 100;
  cublasHandle_t h; CK(cublasCreate(&h));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(h, s));
  void *ws; CK(cudaMalloc(&ws, 32 << 20)); CK(cublasSetWorkspace(h, ws, 32 << 20));
  float *W, *P, *X, *A; CK(cudaMalloc(&W, 4 * N * K)); CK(cudaMalloc(&P, 4 * S * M * N)); CK(cudaMalloc(&X, 4 * M * K)); CK(cudaMalloc(&A, 4 * M * K));
  fill<<<N * K / 256, 256>>>(W, N * K, 0.05f); fill<<<M * K / 256, 256>>>(X, M * K, 1.f); fill<<<M * K / 256, 256>>>(A, M * K, 1.f);
  CK(cudaDeviceSynchronize());
  float one = 1, zero = 0;
  // One phase on `stream` (the handle's stream is the caller's to set): the
  // K-split GEMM, then the kernel, launched early when `pdl`.
  auto phaseOn = [&](cudaStream_t stream, bool pdl) {
    CK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K / S, &one, W, CUDA_R_32F, K, K / S, A, CUDA_R_32F, K, K / S,
                                  &zero, P, CUDA_R_32F, N, (long long)M * N, S, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = M * K / 256; cfg.blockDim = 256; cfg.stream = stream;
    cudaLaunchAttribute at; at.id = cudaLaunchAttributeProgrammaticStreamSerialization; at.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &at; cfg.numAttrs = pdl ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, phase, (const float *)P, (const float *)X, A, M, N, K, S));
  };
  auto build = [&](bool pdl) {
    auto fwd = [&]() { for (int t = 0; t < 2 * T; ++t) phaseOn(s, pdl); };
    fwd(); CK(cudaStreamSynchronize(s));
    cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); fwd(); CK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0)); cudaGraphDestroy(g); return ge; };
  cudaStream_t timed = s; // Where the graphs are launched when timed.
  auto time = [&](cudaGraphExec_t ge) {
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
    for (int r = 0; r < 25; ++r) { cudaEventRecord(e0, timed); cudaGraphLaunch(ge, timed); cudaEventRecord(e1, timed); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); return 1000 * ts[ts.size() / 2] / T; };
  cudaGraphExec_t with = build(true), without = build(false);
  printf("before: early launch %.2f us/step, plain %.2f\n", time(with), time(without));
  const char *trig = argc > 1 ? argv[1] : "sgemm-other-stream";
  cudaStream_t s2 = s; // The trigger's stream.
  if (!strcmp(trig, "sgemm-other-stream") || !strcmp(trig, "sgemm-same-stream") || !strcmp(trig, "sgemm-same-handle")) {
    cublasHandle_t h2 = h;
    if (strcmp(trig, "sgemm-same-handle")) { CK(cublasCreate(&h2)); }
    if (!strcmp(trig, "sgemm-other-stream")) { CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking)); }
    CK(cublasSetStream(h2, s2));
    float *x, *w, *y; CK(cudaMalloc(&x, 4 * 64 * 1024)); CK(cudaMalloc(&w, 4 * 1024 * 4096)); CK(cudaMalloc(&y, 4 * 64 * 4096));
    CK(cublasSgemm(h2, CUBLAS_OP_N, CUBLAS_OP_N, 4096, 64, 1024, &one, w, 4096, x, 1024, &zero, y, 4096));
    CK(cudaDeviceSynchronize());
    if (!strcmp(trig, "sgemm-same-handle")) { CK(cublasSetStream(h, s)); CK(cublasSetWorkspace(h, ws, 32 << 20)); }
  } else if (!strcmp(trig, "pdl-direct-other-stream") || !strcmp(trig, "pdl-direct-same-stream") ||
             !strcmp(trig, "plain-direct-other-stream") || !strcmp(trig, "plain-direct-same-stream") ||
             !strcmp(trig, "gemms-other-stream")) {
    // The step's GEMM and kernel launched directly (no graph), as a model's
    // first call does, early launch unless "plain"; "gemms": the GEMMs alone.
    bool pdl = strncmp(trig, "pdl", 3) == 0;
    if (strstr(trig, "other")) CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cublasSetStream(h, s2));
    for (int t = 0; t < 20; ++t) {
      if (strncmp(trig, "gemms", 5)) { phaseOn(s2, pdl); continue; }
      CK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K / S, &one, W, CUDA_R_32F, K, K / S, A, CUDA_R_32F, K, K / S,
                                    &zero, P, CUDA_R_32F, N, (long long)M * N, S, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    }
    CK(cudaDeviceSynchronize());
    CK(cublasSetStream(h, s)); CK(cublasSetWorkspace(h, ws, 32 << 20));
  } else if (!strcmp(trig, "cluster-kernel-other-stream") || !strcmp(trig, "cluster-kernel-same-stream") ||
             !strcmp(trig, "cluster-kernel-legacy-stream") || !strcmp(trig, "fills-other-stream")) {
    // 20 launches of a kernel in clusters of 2 (cuBLAS's Hopper GEMMs launch
    // in clusters), plain stream order; "fills": the same kernel without
    // clusters.
    if (strstr(trig, "other")) CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    if (strstr(trig, "legacy")) s2 = 0;
    for (int t = 0; t < 20; ++t) {
      cudaLaunchConfig_t cfg = {}; cfg.gridDim = M * K / 256; cfg.blockDim = 256; cfg.stream = s2;
      cudaLaunchAttribute at; at.id = cudaLaunchAttributeClusterDimension; at.val.clusterDim.x = 2;
      at.val.clusterDim.y = 1; at.val.clusterDim.z = 1; cfg.attrs = &at; cfg.numAttrs = strncmp(trig, "fills", 5) ? 1 : 0;
      CK(cudaLaunchKernelEx(&cfg, fill, X, (size_t)M * K, 1.f));
    }
    CK(cudaDeviceSynchronize());
  } else if (!strcmp(trig, "malloc")) {
    void *p; CK(cudaMalloc(&p, 64 << 20)); CK(cudaDeviceSynchronize());
  } else if (!strcmp(trig, "kernel-other-stream")) {
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking)); fill<<<M * K / 256, 256, 0, s2>>>(X, M * K, 1.f); CK(cudaDeviceSynchronize());
  }
  // What brings the first state back, if anything (argv[2]).
  const char *undo = argc > 2 ? argv[2] : "";
  if (*undo) {
    printf("after %s, before %s: early launch %.2f us/step, plain %.2f\n", trig, undo, time(with), time(without));
    if (!strcmp(undo, "destroy-stream") && s2 != s) {
      CK(cudaStreamDestroy(s2));
    } else if (!strcmp(undo, "upload")) {
      CK(cudaGraphUpload(with, s)); CK(cudaGraphUpload(without, s));
    } else if (!strncmp(undo, "carveout-", 9)) {
      // The shared-memory share of the SMs' L1 our kernel asks for.
      CK(cudaFuncSetAttribute(phase, cudaFuncAttributePreferredSharedMemoryCarveout, atoi(undo + 9)));
    } else if (!strcmp(undo, "cache-prefer-l1")) {
      CK(cudaDeviceSetCacheConfig(cudaFuncCachePreferL1));
    } else if (!strcmp(undo, "cache-prefer-shared")) {
      CK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
    } else if (!strcmp(undo, "l2-reset")) {
      CK(cudaCtxResetPersistingL2Cache());
    } else if (!strcmp(undo, "stack-limit")) {
      size_t stack; CK(cudaDeviceGetLimit(&stack, cudaLimitStackSize)); printf("stack limit %zu\n", stack);
      CK(cudaDeviceSetLimit(cudaLimitStackSize, 1024));
    } else if (!strcmp(undo, "launch-on-trigger-stream")) {
      // The graphs launched where the trigger's kernels ran.
      timed = s2;
    } else if (!strcmp(undo, "launch-on-legacy-stream")) {
      timed = cudaStreamLegacy;
    } else if (!strcmp(undo, "plain-fills-same-stream")) {
      // Plain launches on the graphs' own stream after the trigger.
      for (int t = 0; t < 20; ++t) fill<<<M * K / 256, 256, 0, s>>>(X, M * K, 1.f);
    } else if (!strcmp(undo, "graph-mem-trim")) {
      CK(cudaDeviceGraphMemTrim(0));
    } else {
      printf("unknown undo %s\n", undo); return 1;
    }
    CK(cudaDeviceSynchronize());
  }
  printf("after %s: early launch %.2f us/step, plain %.2f\n", trig, time(with), time(without));
  cudaGraphExec_t with2 = build(true), without2 = build(false);
  printf("after %s, graphs captured again: early launch %.2f us/step, plain %.2f\n", trig, time(with2), time(without2));
  return 0;
}
