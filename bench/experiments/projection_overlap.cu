// Experiment: the hoisted input projection (one GEMM over all T·B rows) runs
// before the first step, and at `wide` in bf16 it is 17% of the call. Step t
// needs only rows t of it: does splitting it into chunks on a forked stream
// (a branch of the graph; step t waits for its chunk's event) let the
// recurrence start after the first chunk and the rest overlap the steps?
// The LSTM as we run it: the step's GEMM accumulates h·Uᵀ onto its
// projection row (beta = 1), then one kernel (launched early) updates c and
// h. `wide` in bf16 (T = 50, B = 32, I = H = 2048; bf16 operands, f32 sums and
// gates) and `medium` in fp32 with TF32 (T = 100, B = 64, I = H = 1024).
// Variants: the projection up front (what the compiler emits), and in
// 2, 5 or 10 chunks on a forked stream. ms per call, median of 20 graph
// replays, three rounds; h after the call against the first variant.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/projection_overlap.cu -lcublas -o build/exp/projection_overlap
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <functional>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fillf(float *p, size_t n, float s, unsigned seed) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * ((((i + seed) * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__global__ void fillb(__nv_bfloat16 *p, size_t n, float s, unsigned seed) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = __float2bfloat16(s * ((((i + seed) * 2654435761u) % 1000) / 1000.0f - 0.5f)); }
__device__ float sig(float x) { return 1.f / (1.f + expf(-x)); }
template <typename T> __device__ T fromFloat(float v);
template <> __device__ float fromFloat<float>(float v) { return v; }
template <> __device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
// g: [B, 4H] projection row plus h·Uᵀ (biases folded in); c f32, h of T.
template <typename T>
__global__ void cellKernel(const float *g, float *c, T *h, int B, int H) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; const float *r = g + (size_t)b * 4 * H;
  float cn = sig(r[H + j]) * c[i] + sig(r[j]) * tanhf(r[2 * H + j]); c[i] = cn; h[i] = fromFloat<T>(sig(r[3 * H + j]) * tanhf(cn));
}
template <typename T>
void run(const char *name, int T_, int B, int H, cudaDataType type, cublasComputeType_t compute) {
  const int I = H, N = 4 * H;
  cublasHandle_t hd, hp; CK(cublasCreate(&hd)); CK(cublasCreate(&hp));
  cudaStream_t s, sp; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&sp, cudaStreamNonBlocking));
  CK(cublasSetStream(hd, s)); CK(cublasSetStream(hp, sp));
  void *w1, *w2; CK(cudaMalloc(&w1, 32 << 20)); CK(cudaMalloc(&w2, 32 << 20)); CK(cublasSetWorkspace(hd, w1, 32 << 20)); CK(cublasSetWorkspace(hp, w2, 32 << 20));
  T *X, *W, *U, *h; float *P, *c;
  CK(cudaMalloc(&X, sizeof(T) * (size_t)T_ * B * I)); CK(cudaMalloc(&W, sizeof(T) * (size_t)N * I)); CK(cudaMalloc(&U, sizeof(T) * (size_t)N * H));
  CK(cudaMalloc(&h, sizeof(T) * (size_t)B * H)); CK(cudaMalloc(&P, 4 * (size_t)T_ * B * N)); CK(cudaMalloc(&c, 4 * (size_t)B * H));
  auto fill = [&](T *p, size_t n, float sc, unsigned seed) {
    if (sizeof(T) == 4) fillf<<<(n + 255) / 256, 256>>>((float *)p, n, sc, seed); else fillb<<<(n + 255) / 256, 256>>>((__nv_bfloat16 *)p, n, sc, seed); };
  fill(X, (size_t)T_ * B * I, 2.f, 1); fill(W, (size_t)N * I, 0.05f, 2); fill(U, (size_t)N * H, 0.05f, 3);
  CK(cudaDeviceSynchronize());
  float one = 1, zero = 0;
  std::vector<cudaEvent_t> ev(64); for (auto &event : ev) CK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  cudaEvent_t fork; CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  auto projection = [&](cublasHandle_t hh, int t0, int t1) {  // rows of steps [t0, t1)
    CK(cublasGemmEx(hh, CUBLAS_OP_T, CUBLAS_OP_N, N, (t1 - t0) * B, I, &one, W, type, I, X + (size_t)t0 * B * I, type, I, &zero,
                    P + (size_t)t0 * B * N, CUDA_R_32F, N, compute, CUBLAS_GEMM_DEFAULT)); };
  auto step = [&](int t) {
    CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, N, B, H, &one, U, type, H, h, type, H, &one, P + (size_t)t * B * N, CUDA_R_32F, N,
                    compute, CUBLAS_GEMM_DEFAULT));
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = (B * H + 255) / 256; cfg.blockDim = 256; cfg.stream = s;
    cudaLaunchAttribute at; at.id = cudaLaunchAttributeProgrammaticStreamSerialization; at.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &at; cfg.numAttrs = sizeof(T) == 4 ? 1 : 0;  // as our runtime: not after a bf16 cuBLAS GEMM
    CK(cudaLaunchKernelEx(&cfg, cellKernel<T>, (const float *)(P + (size_t)t * B * N), c, h, B, H)); };
  auto call = [&](int chunks) {
    CK(cudaMemsetAsync(h, 0, sizeof(T) * B * H, s)); CK(cudaMemsetAsync(c, 0, 4 * B * H, s));
    if (chunks == 0) { CK(cublasSetStream(hp, s)); projection(hp, 0, T_); CK(cublasSetStream(hp, sp)); for (int t = 0; t < T_; ++t) step(t); return; }
    CK(cudaEventRecord(fork, s)); CK(cudaStreamWaitEvent(sp, fork, 0));
    int per = (T_ + chunks - 1) / chunks;
    for (int k = 0; k < chunks; ++k) { projection(hp, k * per, std::min(T_, (k + 1) * per)); CK(cudaEventRecord(ev[k], sp)); }
    for (int t = 0; t < T_; ++t) { if (t % per == 0) CK(cudaStreamWaitEvent(s, ev[t / per], 0)); step(t); } };
  auto graphOf = [&](int chunks) { call(chunks); CK(cudaStreamSynchronize(s)); CK(cudaStreamSynchronize(sp)); cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); call(chunks); CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0)); cudaGraphDestroy(g); CK(cudaGraphUpload(ge, s)); return ge; };
  const int variants[] = {0, 2, 5, 10};
  std::vector<cudaGraphExec_t> gs; for (int v : variants) gs.push_back(graphOf(v));
  auto time = [&](cudaGraphExec_t ge) { cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
    for (int r = 0; r < 25; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2]; };
  std::vector<std::vector<T>> out;
  for (int round = 0; round < 3; ++round) {
    printf("%s round %d:", name, round);
    for (size_t k = 0; k < gs.size(); ++k) printf("  %s %.3f ms", variants[k] ? (std::to_string(variants[k]) + " chunks").c_str() : "up front", time(gs[k]));
    printf("\n"); }
  for (size_t k = 0; k < gs.size(); ++k) { CK(cudaGraphLaunch(gs[k], s)); CK(cudaStreamSynchronize(s)); out.emplace_back(B * H);
    CK(cudaMemcpy(out.back().data(), h, sizeof(T) * B * H, cudaMemcpyDeviceToHost)); }
  for (size_t k = 1; k < gs.size(); ++k) { bool same = true; for (int i = 0; i < B * H; ++i) same &= !memcmp(&out[k][i], &out[0][i], sizeof(T));
    printf("%s %d chunks: h %s the up-front variant's\n", name, variants[k], same ? "identical to" : "differs from"); }
}
int main() {
  run<__nv_bfloat16>("wide bf16", 50, 32, 2048, CUDA_R_16BF, CUBLAS_COMPUTE_32F);
  run<float>("medium fp32", 100, 64, 1024, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32);
  return 0;
}
