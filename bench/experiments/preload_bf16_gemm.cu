// Experiment: the bf16 GRU step at `wide` (B = 32, H = 2048) with the
// recurrent product as K-split partials from our own GEMM that is launched
// early and loads its weights into registers before it waits for the kernel
// ahead (the f32 kernel of lib/Runtime/Cuda/PreloadedPartialsGemm.cu, in
// bf16), against cuBLAS's GEMM (what the compiler emits for it today).
//
// U is 6144 x 2048 bf16 (24 MiB). Block: 4 warps, 64 output columns (16 a
// warp) over a K slice of 512; a lane holds its 16 columns x 512 as mma
// m16n8k16 A fragments (128 registers). Grid (96, 4) = 384 blocks: three a
// SM, so every block is resident and every weight is loaded before the wait,
// while the step's pointwise kernel ahead still runs. After the wait: h's
// slice (32 x 512 bf16) staged with cp.async, 128 mma a warp, 4 partials
// [32, 6144] f32 written; the GRU kernel adds them.
// Every variant: T = 50 steps in a CUDA graph, µs per step (median of 20
// replays, three rounds), outputs of all steps against the cuBLAS form.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/preload_bf16_gemm.cu -lcublas -o build/exp/preload_bf16_gemm
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <functional>
#include <vector>
#include "../../lib/Runtime/Cuda/PreloadedPartialsGemm.cu"
#include "step_harness.cuh"
#include "persistent_step.cuh"

constexpr int B = 32, H = 2048, G = 3 * H, T = 50, S = 4, kSlice = H / S;
constexpr int kStageLd = kSlice + 8;  // padded bf16 rows of h's slice

// P[s][b][n] = sum over k in slice s of h[b][k] U[n][k].
template <bool kPreload>
__global__ void __launch_bounds__(128) preloadedBf16(const __nv_bfloat16 *h, const __nv_bfloat16 *u, float *p, int n) {
  __shared__ __align__(16) __nv_bfloat16 hs[B * kStageLd];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * 64 + 16 * warp, k0 = blockIdx.y * kSlice;
  unsigned wr[kSlice / 16][4];
  auto loadWeights = [&] { loadFragmentsBf16(wr, u + (size_t)(n0 + g) * H + k0, u + (size_t)(n0 + g + 8) * H + k0, t); };
  if (kPreload) loadWeights();
  gridWait();
  letNextLaunch();
  for (int v = tid; v < B * kSlice / 8; v += 128) {
    int row = v / (kSlice / 8), col = 8 * (v % (kSlice / 8));
    copy16(hs + row * kStageLd + col, h + (size_t)row * H + k0 + col);
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  if (!kPreload) loadWeights();
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  float acc[4][4] = {};
  const __nv_bfloat16 *bBase = hs + (lane % 8) * kStageLd + 8 * ((lane / 8) % 2);
#pragma unroll
  for (int kk = 0; kk < kSlice / 16; ++kk)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      unsigned b0, b1;
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(smem32(bBase + nt * 8 * kStageLd + 16 * kk)));
      mmaBf16(acc[nt], wr[kk], b0, b1);
    }
  // acc[nt]: columns n0 + g (and + 8) x batch rows 8nt + 2t (and + 1).
  float *out = p + (size_t)blockIdx.y * B * n + n0;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    int b = nt * 8 + 2 * t;
    out[(size_t)b * n + g] = acc[nt][0]; out[(size_t)(b + 1) * n + g] = acc[nt][1];
    out[(size_t)b * n + g + 8] = acc[nt][2]; out[(size_t)(b + 1) * n + g + 8] = acc[nt][3];
  }
}

int main() {
  CublasStream cs = cublasOnNewStream();
  cublasHandle_t hd = cs.handle; cudaStream_t s = cs.stream;
  float *uf, *x, *bhn, *h0f, *gh;
  __nv_bfloat16 *u, *h0, *hv[3], *ysv[3];
  CK(cudaMalloc(&uf, 4 * (size_t)G * H)); CK(cudaMalloc(&u, 2 * (size_t)G * H));
  CK(cudaMalloc(&x, 4 * (size_t)T * B * G)); CK(cudaMalloc(&bhn, 4 * H)); CK(cudaMalloc(&gh, 4 * (size_t)S * B * G));
  CK(cudaMalloc(&h0f, 4 * B * H)); CK(cudaMalloc(&h0, 2 * B * H));
  for (int v = 0; v < 3; ++v) { CK(cudaMalloc(&hv[v], 2 * 2 * B * H)); CK(cudaMalloc(&ysv[v], 2 * (size_t)T * B * H)); }
  fill<<<G * H / 256, 256>>>(uf, (size_t)G * H, 0.06f, 1); toBf16<<<G * H / 256, 256>>>(uf, u, (size_t)G * H);
  fill<<<T * B * G / 256, 256>>>(x, (size_t)T * B * G, 2.f, 2); fill<<<H / 256, 256>>>(bhn, H, 0.5f, 4);
  fill<<<B * H / 256, 256>>>(h0f, B * H, 1.f, 3); toBf16<<<B * H / 256, 256>>>(h0f, h0, B * H);
  CK(cudaDeviceSynchronize());
  int perSm = 0, sms = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, preloadedBf16<true>, 128, 0));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  printf("preloaded bf16 GEMM: grid %d x %d of 128 threads, %d blocks per SM x %d SMs resident at once\n", G / 64, S, perSm, sms);
  // form 0: cuBLAS GEMM + kernel; 1: preloaded partials + kernel; 2: the same kernel, weights loaded after the wait.
  auto steps = [&](int form) {
    __nv_bfloat16 *hb = hv[form], *ys = ysv[form];
    CK(cudaMemcpyAsync(hb, h0, 2 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int step = 0; step < T; ++step) {
      const __nv_bfloat16 *hp = hb + (size_t)(step % 2) * B * H;
      __nv_bfloat16 *hn = hb + (size_t)((step + 1) % 2) * B * H;
      if (form == 0)
        recurrentGemmBf16(hd, u, hp, B, G, H, gh);
      else if (form == 1) launchEarly(s, dim3(G / 64, S), dim3(128), 0, preloadedBf16<true>, hp, (const __nv_bfloat16 *)u, gh, G);
      else launchEarly(s, dim3(G / 64, S), dim3(128), 0, preloadedBf16<false>, hp, (const __nv_bfloat16 *)u, gh, G);
      launchEarly(s, dim3(B * H / 256), dim3(256), 0, gruBf16Step<B, H>, (const float *)gh, form == 0 ? 1 : S, (const float *)(x + (size_t)step * B * G),
                  (const float *)bhn, hp, hn, ys + (size_t)step * B * H);
    } };
  const char *names[] = {"cuBLAS GEMM + kernel", "preloaded bf16 partials + kernel", "the same, weights after the wait"};
  std::vector<cudaGraphExec_t> graphs;
  for (int f = 0; f < 3; ++f) graphs.push_back(captureGraph(s, [&, f] { steps(f); }));
  for (int round = 0; round < 3; ++round) {
    printf("round %d, us per step:", round);
    for (int f = 0; f < 3; ++f) printf(" %s %.2f;", names[f], usPerStep(graphs[f], s, T));
    printf("\n");
  }
  for (auto g : graphs) CK(cudaGraphLaunch(g, s));
  CK(cudaStreamSynchronize(s));
  for (int f = 1; f < 3; ++f) {
    Bf16Difference d = compareBf16(ysv[0], ysv[f], (size_t)T * B * H);
    printf("%s: outputs of %d steps against cuBLAS's: max abs diff %.3e (max |y| %.3e), %zu of %zu differ\n", names[f], T, d.maxAbsDiff,
           d.maxAbs, d.differing, (size_t)T * B * H);
  }
  return 0;
}
