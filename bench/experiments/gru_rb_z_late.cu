// Experiment: the GRU with the reset gate before the matmul at `medium`
// (B = 64, H = 1024), two ways per step, in a CUDA graph of T steps, kernels
// in plain stream order, K-split partials summed by the kernels as the
// compiler emits them:
//  A (what the compiler does): h·[U_r; U_z] (N = 2048, 4 slices) -> kernel
//    (r, z, r⊙h) -> (r⊙h)·U_n (N = 1024, 8 slices) -> kernel (h').
//  B (z moved into the second product): h·U_r (N = 1024, 8 slices) -> kernel
//    (r; writes [r⊙h | h]) -> [r⊙h | h]·[U_n | U_z] (N = 1024, 16 slices of
//    K = 2048: the first 8 partials sum to U_n(r⊙h), the last 8 to U_z h)
//    -> kernel (n, z, h').
// B's first product is narrower; its second reads twice the K. µs per step,
// median of 12, and B's result against A's.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/gru_rb_z_late.cu -lcublas -o build/exp/gru_rb_z_late
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
constexpr int B = 64, H = 1024, T = 100;
__global__ void fill(float *p, size_t n, float s, unsigned seed) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * ((((i + seed) * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__device__ float sig(float x) { return 1.f / (1.f + expf(-x)); }
// x: [T, B, 3H] input projections (r, z, n) with biases folded in.
__global__ void a1(const float *p, const float *x, const float *h, float *rh, float *z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j], sz = x[b * 3 * H + H + j];
  for (int s = 0; s < 4; ++s) { sr += p[(size_t)s * B * 2 * H + b * 2 * H + j]; sz += p[(size_t)s * B * 2 * H + b * 2 * H + H + j]; }
  rh[i] = sig(sr) * h[i]; z[i] = sig(sz);
}
__global__ void a2(const float *p, const float *x, const float *z, float *h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j];
  for (int s = 0; s < 8; ++s) sn += p[(size_t)s * B * H + i];
  float n = tanhf(sn); h[i] = (1 - z[i]) * n + z[i] * h[i];
}
__global__ void b1(const float *p, const float *x, const float *h, float *ab) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j];
  for (int s = 0; s < 8; ++s) sr += p[(size_t)s * B * H + i];
  ab[b * 2 * H + j] = sig(sr) * h[i]; ab[b * 2 * H + H + j] = h[i];
}
__global__ void b2(const float *p, const float *x, float *h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j], sz = x[b * 3 * H + H + j];
  for (int s = 0; s < 8; ++s) { sn += p[(size_t)s * B * H + i]; sz += p[(size_t)(s + 8) * B * H + i]; }
  float n = tanhf(sn), z = sig(sz); h[i] = (1 - z) * n + z * h[i];
}
int main() {
  cublasHandle_t hd; CK(cublasCreate(&hd));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  void *ws; CK(cudaMalloc(&ws, 32 << 20)); CK(cublasSetWorkspace(hd, ws, 32 << 20));
  float *U, *Ucat, *X, *P1, *P2, *hA, *hB, *rh, *z, *ab, *h0;
  CK(cudaMalloc(&U, 4 * 3 * H * H));       // rows: U_r, U_z, U_n ([3H, H])
  CK(cudaMalloc(&Ucat, 4 * 2 * H * H));    // [H, 2H]: row n = U_n[n, :] then U_z[n, :]
  CK(cudaMalloc(&X, 4 * (size_t)T * B * 3 * H)); CK(cudaMalloc(&P1, 4 * 8 * B * H)); CK(cudaMalloc(&P2, 4 * 16 * B * H));
  CK(cudaMalloc(&hA, 4 * B * H)); CK(cudaMalloc(&hB, 4 * B * H)); CK(cudaMalloc(&h0, 4 * B * H));
  CK(cudaMalloc(&rh, 4 * B * H)); CK(cudaMalloc(&z, 4 * B * H)); CK(cudaMalloc(&ab, 4 * B * 2 * H));
  fill<<<3 * H * H / 256, 256>>>(U, 3 * H * H, 0.06f, 1); fill<<<T * B * 3 * H / 256, 256>>>(X, (size_t)T * B * 3 * H, 2.f, 2);
  fill<<<B * H / 256, 256>>>(h0, B * H, 1.f, 3);
  for (int n = 0; n < H; ++n) {  // Ucat from U, on the device
    CK(cudaMemcpy2D(Ucat + (size_t)n * 2 * H, 4 * H, U + (size_t)(2 * H + n) * H, 4 * H, 4 * H, 1, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy2D(Ucat + (size_t)n * 2 * H + H, 4 * H, U + (size_t)(H + n) * H, 4 * H, 4 * H, 1, cudaMemcpyDeviceToDevice));
  }
  CK(cudaDeviceSynchronize());
  float one = 1, zero = 0; const int G = B * H / 256;
  // C[slices, M, N] = partials of A[M, K]·W[N, K]ᵀ over K slices.
  auto partials = [&](const float *W, int ldw, const float *A, int lda, int n, int k, int slices, float *C) {
    CK(cublasGemmStridedBatchedEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, n, B, k / slices, &one, W, CUDA_R_32F, ldw, k / slices, A, CUDA_R_32F, lda,
                                  k / slices, &zero, C, CUDA_R_32F, n, (long long)B * n, slices, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT)); };
  auto stepsA = [&]() { CK(cudaMemcpyAsync(hA, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int t = 0; t < T; ++t) { const float *x = X + (size_t)t * B * 3 * H;
      partials(U, H, hA, H, 2 * H, H, 4, P1); a1<<<G, 256, 0, s>>>(P1, x, hA, rh, z);
      partials(U + (size_t)2 * H * H, H, rh, H, H, H, 8, P2); a2<<<G, 256, 0, s>>>(P2, x, z, hA); } };
  auto stepsB = [&]() { CK(cudaMemcpyAsync(hB, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int t = 0; t < T; ++t) { const float *x = X + (size_t)t * B * 3 * H;
      partials(U, H, hB, H, H, H, 8, P1); b1<<<G, 256, 0, s>>>(P1, x, hB, ab);
      partials(Ucat, 2 * H, ab, 2 * H, H, 2 * H, 16, P2); b2<<<G, 256, 0, s>>>(P2, x, hB); } };
  auto graphOf = [&](auto steps) { steps(); CK(cudaStreamSynchronize(s)); cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); steps(); CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0)); cudaGraphDestroy(g); return ge; };
  cudaGraphExec_t gA = graphOf(stepsA), gB = graphOf(stepsB);
  auto time = [&](cudaGraphExec_t ge) { cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
    for (int r = 0; r < 15; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); return 1000 * ts[ts.size() / 2] / T; };
  for (int round = 0; round < 3; ++round)
    printf("round %d: A (z in the first product) %.2f us/step, B (z in the second) %.2f us/step\n", round, time(gA), time(gB));
  std::vector<float> a(B * H), b(B * H);
  CK(cudaMemcpy(a.data(), hA, 4 * B * H, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(b.data(), hB, 4 * B * H, cudaMemcpyDeviceToHost));
  double num = 0, den = 0; for (int i = 0; i < B * H; ++i) { num = std::max(num, (double)std::fabs(a[i] - b[i])); den = std::max(den, (double)std::fabs(a[i])); }
  printf("B against A after %d steps: max abs diff %.2e (max |h| %.2e)\n", T, num, den);
  return 0;
}
