// Experiment: the GRU with the reset gate before the matmul at `medium`
// (B = 64, H = 1024). z's product h·U_z is not needed until the step's last
// kernel, so it can leave the critical path: does running it on a forked
// stream (a branch of the step's graph) beside the first kernel and the
// second product shorten the step?
//  A (what the compiler does): h·[U_r; U_z] (N = 2048, 4 slices) -> kernel
//    (r⊙h, z) -> (r⊙h)·U_n (N = 1024, 8 slices) -> kernel (h').
//  F(zs): h·U_r (N = 1024, 8 slices) -> kernel (r⊙h) -> (r⊙h)·U_n -> kernel
//    (n, z, h'), with h·U_z (zs slices) on a second stream forked after h
//    and joined before the last kernel.
//  L: the LSTM step at the same shape (h·U, N = 4096, one GEMM -> kernel),
//    for the ratio the zoo table uses.
// Kernels are launched early (programmatic stream serialization) as the
// compiler's are. Every variant is timed before and after a trigger of the
// process state in which early launch stops paying (20 steps of A launched
// directly in plain stream order on a third stream, see pdl_state.cu).
// µs per step, median of 20 graph replays; F's h against A's.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/gru_rb_z_fork.cu -lcublas -o build/exp/gru_rb_z_fork
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
constexpr int B = 64, H = 1024, T = 100;
__global__ void fill(float *p, size_t n, float s, unsigned seed) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * ((((i + seed) * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__device__ float sig(float x) { return 1.f / (1.f + expf(-x)); }
__device__ void waitPrimary() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// x: [T, B, 3H] input projections (r, z, n) with biases folded in.
__global__ void a1(const float *p, const float *x, const float *h, float *rh, float *z) {
  waitPrimary(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j], sz = x[b * 3 * H + H + j];
  for (int s = 0; s < 4; ++s) { sr += p[(size_t)s * B * 2 * H + b * 2 * H + j]; sz += p[(size_t)s * B * 2 * H + b * 2 * H + H + j]; }
  rh[i] = sig(sr) * h[i]; z[i] = sig(sz);
}
__global__ void a2(const float *p, const float *x, const float *z, float *h) {
  waitPrimary(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j];
  for (int s = 0; s < 8; ++s) sn += p[(size_t)s * B * H + i];
  float n = tanhf(sn); h[i] = (1 - z[i]) * n + z[i] * h[i];
}
__global__ void f1(const float *p, const float *x, const float *h, float *rh) {
  waitPrimary(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j];
  for (int s = 0; s < 8; ++s) sr += p[(size_t)s * B * H + i];
  rh[i] = sig(sr) * h[i];
}
__global__ void f2(const float *p, const float *pz, int zs, const float *x, float *h) {
  waitPrimary(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j], sz = x[b * 3 * H + H + j];
  for (int s = 0; s < 8; ++s) sn += p[(size_t)s * B * H + i];
  for (int s = 0; s < zs; ++s) sz += pz[(size_t)s * B * H + i];
  float n = tanhf(sn), z = sig(sz); h[i] = (1 - z) * n + z * h[i];
}
// LSTM: x [T, B, 4H] with biases, g = h·U [B, 4H], c and h updated.
__global__ void l1(const float *g, const float *x, float *c, float *h) {
  waitPrimary(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; const float *gb = g + (size_t)b * 4 * H, *xb = x + (size_t)b * 4 * H;
  float ig = sig(gb[j] + xb[j]), fg = sig(gb[H + j] + xb[H + j]), cg = tanhf(gb[2 * H + j] + xb[2 * H + j]), og = sig(gb[3 * H + j] + xb[3 * H + j]);
  float cn = fg * c[i] + ig * cg; c[i] = cn; h[i] = og * tanhf(cn);
}
int main() {
  cublasHandle_t hd, hz; CK(cublasCreate(&hd)); CK(cublasCreate(&hz));
  cudaStream_t s, sz, s3; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&sz, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  CK(cublasSetStream(hd, s)); CK(cublasSetStream(hz, sz));
  void *ws, *wz; CK(cudaMalloc(&ws, 32 << 20)); CK(cudaMalloc(&wz, 32 << 20));
  CK(cublasSetWorkspace(hd, ws, 32 << 20)); CK(cublasSetWorkspace(hz, wz, 32 << 20));
  float *U, *UL, *X, *XL, *P1, *P2, *PZ, *G, *hA, *hF, *h0, *rh, *z, *c, *hL;
  CK(cudaMalloc(&U, 4 * 3 * H * H));  // rows: U_r, U_z, U_n ([3H, H])
  CK(cudaMalloc(&UL, 4 * 4 * H * H));
  CK(cudaMalloc(&X, 4 * (size_t)T * B * 3 * H)); CK(cudaMalloc(&XL, 4 * (size_t)T * B * 4 * H));
  CK(cudaMalloc(&P1, 4 * 8 * B * H)); CK(cudaMalloc(&P2, 4 * 8 * B * H)); CK(cudaMalloc(&PZ, 4 * 8 * B * H)); CK(cudaMalloc(&G, 4 * B * 4 * H));
  CK(cudaMalloc(&hA, 4 * B * H)); CK(cudaMalloc(&hF, 4 * B * H)); CK(cudaMalloc(&h0, 4 * B * H)); CK(cudaMalloc(&hL, 4 * B * H));
  CK(cudaMalloc(&rh, 4 * B * H)); CK(cudaMalloc(&z, 4 * B * H)); CK(cudaMalloc(&c, 4 * B * H));
  fill<<<3 * H * H / 256, 256>>>(U, 3 * H * H, 0.06f, 1); fill<<<T * B * 3 * H / 256, 256>>>(X, (size_t)T * B * 3 * H, 2.f, 2);
  fill<<<4 * H * H / 256, 256>>>(UL, 4 * H * H, 0.06f, 4); fill<<<T * B * 4 * H / 256, 256>>>(XL, (size_t)T * B * 4 * H, 2.f, 5);
  fill<<<B * H / 256, 256>>>(h0, B * H, 1.f, 3);
  CK(cudaDeviceSynchronize());
  float one = 1, zero = 0; const int Gr = B * H / 256;
  // C[slices, M, N] = partials of A[M, K]·W[N, K]ᵀ over K slices.
  auto partials = [&](cublasHandle_t h, const float *W, const float *A, int n, int slices, float *C) {
    CK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, B, H / slices, &one, W, CUDA_R_32F, H, H / slices, A, CUDA_R_32F, H,
                                  H / slices, &zero, C, CUDA_R_32F, n, (long long)B * n, slices, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT)); };
  auto early = [&](cudaStream_t st, auto kernel, auto... args) {
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = Gr; cfg.blockDim = 256; cfg.stream = st;
    cudaLaunchAttribute at; at.id = cudaLaunchAttributeProgrammaticStreamSerialization; at.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &at; cfg.numAttrs = 1; CK(cudaLaunchKernelEx(&cfg, kernel, args...)); };
  auto stepsA = [&](cudaStream_t st) { CK(cublasSetStream(hd, st)); CK(cudaMemcpyAsync(hA, h0, 4 * B * H, cudaMemcpyDeviceToDevice, st));
    for (int t = 0; t < T; ++t) { const float *x = X + (size_t)t * B * 3 * H;
      partials(hd, U, hA, 2 * H, 4, P1); early(st, a1, (const float *)P1, x, (const float *)hA, rh, z);
      partials(hd, U + (size_t)2 * H * H, rh, H, 8, P2); early(st, a2, (const float *)P2, x, (const float *)z, hA); }
    CK(cublasSetStream(hd, s)); };
  cudaEvent_t evH, evZ; CK(cudaEventCreateWithFlags(&evH, cudaEventDisableTiming)); CK(cudaEventCreateWithFlags(&evZ, cudaEventDisableTiming));
  auto stepsF = [&](int zs) { CK(cudaMemcpyAsync(hF, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int t = 0; t < T; ++t) { const float *x = X + (size_t)t * B * 3 * H;
      CK(cudaEventRecord(evH, s)); CK(cudaStreamWaitEvent(sz, evH, 0));
      partials(hz, U + (size_t)H * H, hF, H, zs, PZ); CK(cudaEventRecord(evZ, sz));
      partials(hd, U, hF, H, 8, P1); early(s, f1, (const float *)P1, x, (const float *)hF, rh);
      partials(hd, U + (size_t)2 * H * H, rh, H, 8, P2); CK(cudaStreamWaitEvent(s, evZ, 0));
      early(s, f2, (const float *)P2, (const float *)PZ, zs, x, hF); } };
  auto stepsL = [&]() { CK(cudaMemcpyAsync(hL, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s)); CK(cudaMemsetAsync(c, 0, 4 * B * H, s));
    for (int t = 0; t < T; ++t) { const float *x = XL + (size_t)t * B * 4 * H;
      CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, 4 * H, B, H, &one, UL, CUDA_R_32F, H, hL, CUDA_R_32F, H, &zero, G, CUDA_R_32F, 4 * H,
                      CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      early(s, l1, (const float *)G, x, c, hL); } };
  auto graphOf = [&](std::function<void()> steps) { steps(); CK(cudaStreamSynchronize(s)); CK(cudaStreamSynchronize(sz)); cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); steps(); CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0)); cudaGraphDestroy(g); CK(cudaGraphUpload(ge, s)); return ge; };
  // The first call of each runs directly on s; capture from then on.
  const int zsList[] = {1, 2, 4, 8};
  std::vector<std::pair<const char *, cudaGraphExec_t>> graphs;
  graphs.push_back({"L  (LSTM)", graphOf(stepsL)});
  graphs.push_back({"A  (z in the first product)", graphOf([&] { stepsA(s); })});
  const char *names[] = {"F1 (z forked, 1 slice)", "F2 (z forked, 2 slices)", "F4 (z forked, 4 slices)", "F8 (z forked, 8 slices)"};
  for (int k = 0; k < 4; ++k) graphs.push_back({names[k], graphOf([&, k] { stepsF(zsList[k]); })});
  auto time = [&](cudaGraphExec_t ge) { cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
    for (int r = 0; r < 25; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); return 1000 * ts[ts.size() / 2] / T; };
  auto report = [&](const char *phase) {
    for (int round = 0; round < 3; ++round) {
      std::vector<float> us; for (auto &g : graphs) us.push_back(time(g.second));
      printf("%s, round %d:", phase, round);
      for (size_t k = 0; k < graphs.size(); ++k) printf("  %s %.2f (%.2fx L)", graphs[k].first, us[k], us[k] / us[0]);
      printf("\n"); } };
  report("before");
  stepsA(s3); CK(cudaStreamSynchronize(s3));  // launched directly: cuBLAS's GEMMs in plain order, on a third stream
  report("after the trigger");
  for (int k = 0; k < 4; ++k) {
    CK(cudaGraphLaunch(graphs[1].second, s)); CK(cudaGraphLaunch(graphs[2 + k].second, s)); CK(cudaStreamSynchronize(s));
    std::vector<float> a(B * H), f(B * H);
    CK(cudaMemcpy(a.data(), hA, 4 * B * H, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(f.data(), hF, 4 * B * H, cudaMemcpyDeviceToHost));
    double num = 0, den = 0; for (int i = 0; i < B * H; ++i) { num = std::max(num, (double)std::fabs(a[i] - f[i])); den = std::max(den, (double)std::fabs(a[i])); }
    printf("%s against A after %d steps: max abs diff %.2e (max |h| %.2e)\n", names[k], T, num, den); }
  return 0;
}
