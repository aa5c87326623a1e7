// Experiment: the recurrent product of a one-row step as our own GEMV that
// loads its (constant) weights before it waits for the grid ahead of it.
//
// At `small-latency` (B = 1) a step is a cuBLAS GEMM of about 3 µs and the
// pointwise kernel. Our kernels are launched with programmatic dependent
// launch, but cuBLAS's are not, so every step still pays a full launch gap.
// Here the product is a GEMV (fp32 FMAs, a warp per output column) launched
// with the same attribute: each warp loads its weight row into registers,
// waits (griddepcontrol.wait), lets the next grid launch, then reads h.
// Steps in CUDA graphs, µs per step.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fillf(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }

__device__ __forceinline__ void gridWait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void letNextLaunch() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }

// C[m, n] (+)= A[m, k] W[n, k]^T, a warp per column, k <= 128 * KV.
template <int KV>
__global__ void __launch_bounds__(256) gemv(const float *a, int64_t lda, const float *w, int64_t ldw, float *c, int64_t ldc, int m, int n, int k, int accumulate, int early) {
  int lane = threadIdx.x % 32, col = blockIdx.x * 8 + threadIdx.x / 32;
  if (!early) gridWait();
  float4 wv[KV];
  const float *row = w + static_cast<int64_t>(col) * ldw;
#pragma unroll
  for (int j = 0; j < KV; ++j) wv[j] = (col < n && 128 * j + 4 * lane < k) ? *reinterpret_cast<const float4 *>(row + 128 * j + 4 * lane) : make_float4(0, 0, 0, 0);
  if (early) gridWait();
  letNextLaunch();
  if (col >= n) return;
  for (int r = 0; r < m; ++r) {
    const float *ar = a + r * lda;
    float sum = 0;
#pragma unroll
    for (int j = 0; j < KV; ++j) if (128 * j + 4 * lane < k) {
      float4 av = *reinterpret_cast<const float4 *>(ar + 128 * j + 4 * lane);
      sum += av.x * wv[j].x + av.y * wv[j].y + av.z * wv[j].z + av.w * wv[j].w;
    }
#pragma unroll
    for (int o = 16; o; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) { float *out = c + r * ldc + col; *out = accumulate ? *out + sum : sum; }
  }
}

__device__ float sig(float x) { return 1.f / (1.f + __expf(-x)); }
// LSTM step on gates [M, 4H] that hold projection + product; writes h into the next step's A.
__global__ void lstm(const float *g, float *h, float *cst, int M, int H, int pdl) {
  if (pdl) gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  const float *r = g + (size_t)b * 4 * H; size_t i = (size_t)b * H + j;
  float cn = sig(r[H + j]) * cst[i] + sig(r[j]) * tanhf(r[2 * H + j]); cst[i] = cn; h[i] = sig(r[3 * H + j]) * tanhf(cn);
}

template <typename Kernel, typename... Args> void launch(bool pdl, dim3 grid, dim3 block, cudaStream_t s, Kernel k, Args... args) {
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = block; cfg.stream = s;
  cudaLaunchAttribute attr; attr.id = cudaLaunchAttributeProgrammaticStreamSerialization; attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr; cfg.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, k, args...));
}

template <typename F> float timeGraph(cudaStream_t s, int reps, F &&body) {
  body(); CK(cudaStreamSynchronize(s)); CK(cudaGetLastError());
  cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); body(); CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
  for (int r = 0; r < 21; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaEventDestroy(e0); cudaEventDestroy(e1);
  return 1000 * ts[ts.size() / 2] / reps;
}

int main() {
  cublasHandle_t hd; CK(cublasCreate(&hd)); cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  float one = 1;
  auto fill = [](float *p, size_t n, float sc) { fillf<<<(n + 255) / 256, 256>>>(p, n, sc); };
  struct Case { int T, M, H, K; };
  for (Case c : {Case{100, 1, 256, 256}, Case{100, 4, 256, 256}, Case{100, 1, 512, 512}, Case{100, 1, 1024, 1024}}) {
    int N = 4 * c.H, K = c.K, M = c.M, H = c.H;
    float *W, *P, *h, *cst, *ref;
    CK(cudaMalloc(&W, (size_t)N * K * 4)); CK(cudaMalloc(&P, (size_t)c.T * M * N * 4)); CK(cudaMalloc(&h, (size_t)M * H * 4)); CK(cudaMalloc(&cst, (size_t)M * H * 4)); CK(cudaMalloc(&ref, (size_t)M * H * 4));
    fill(W, (size_t)N * K, 0.05f); CK(cudaDeviceSynchronize());
    auto reset = [&] { fill(P, (size_t)c.T * M * N, 1); fill(h, (size_t)M * H, 1); fill(cst, (size_t)M * H, 1); };
    dim3 pg((H + 255) / 256, M);
    // variant 0: cuBLAS + PDL kernel; 1: GEMV waiting first; 2: GEMV loading its weights early.
    auto fwd = [&](int variant) {
      for (int t = 0; t < c.T; ++t) {
        float *g = P + (size_t)t * M * N;
        if (variant == 0) CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, h, CUDA_R_32F, K, &one, g, CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
        else if (K <= 256) launch(true, dim3(N / 8), dim3(256), s, gemv<2>, (const float *)h, (int64_t)K, (const float *)W, (int64_t)K, g, (int64_t)N, M, N, K, 1, variant == 2 ? 1 : 0);
        else if (K <= 512) launch(true, dim3(N / 8), dim3(256), s, gemv<4>, (const float *)h, (int64_t)K, (const float *)W, (int64_t)K, g, (int64_t)N, M, N, K, 1, variant == 2 ? 1 : 0);
        else launch(true, dim3(N / 8), dim3(256), s, gemv<8>, (const float *)h, (int64_t)K, (const float *)W, (int64_t)K, g, (int64_t)N, M, N, K, 1, variant == 2 ? 1 : 0);
        launch(true, pg, dim3(256), s, lstm, (const float *)g, h, cst, M, H, 1);
      }
    };
    reset(); fwd(0); CK(cudaStreamSynchronize(s)); CK(cudaMemcpy(ref, h, (size_t)M * H * 4, cudaMemcpyDeviceToDevice));
    std::vector<float> r0((size_t)M * H), r1(r0.size()); CK(cudaMemcpy(r0.data(), ref, r0.size() * 4, cudaMemcpyDeviceToHost));
    reset(); fwd(2); CK(cudaStreamSynchronize(s)); CK(cudaMemcpy(r1.data(), h, r1.size() * 4, cudaMemcpyDeviceToHost));
    double md = 0; for (size_t i = 0; i < r0.size(); ++i) md = std::max(md, (double)fabsf(r0[i] - r1[i]));
    printf("LSTM T %d B %d H %4d: cuBLAS + kernel %.2f, GEMV waiting first %.2f, GEMV with early weights %.2f us/step (max |h diff| vs TF32 cuBLAS %.1e)\n",
           c.T, M, H, timeGraph(s, c.T, [&] { fwd(0); }), timeGraph(s, c.T, [&] { fwd(1); }), timeGraph(s, c.T, [&] { fwd(2); }), md);
    for (float *p : {W, P, h, cst, ref}) cudaFree(p);
  }
  return 0;
}
