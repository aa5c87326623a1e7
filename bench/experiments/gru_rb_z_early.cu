// Experiment: the GRU with the reset gate first, with z's product computed
// by the step's second GEMM launch in blocks that do not wait for the kernel
// ahead of them.
//
// As compiled, a step is GEMM h·[U_r; U_z] (N = 2048), kernel (r, r⊙h, and
// the sums for z), GEMM (r⊙h)·U_n, kernel (z, n, h'). z's product needs only
// h, which the step's first GEMM has already waited for; so here the first
// GEMM computes h·U_r alone (N = 1024) and the second launch has two kinds
// of blocks: those of (r⊙h)·U_n wait for the kernel ahead as before, those
// of h·U_z do not wait at all (their A, h, was complete before the first
// GEMM of the step passed its own wait, which happened before this grid was
// launched) and run in the shadow of the first kernel.
//  split   GEMM h·U_r, kernel (r⊙h), dual GEMM [(r⊙h)·U_n | h·U_z early], kernel;
//  split, z waits   the same with the z blocks waiting too (isolates the overlap);
//  z's sums in kernel 2   the compiled form with the first kernel adding only
//          r's partials and the second z's (the first kernel then reads as
//          the MGU's does).
// The GEMMs are the runtime's preloaded partials kernel (8 slices of 128),
// copied here with the second operand pair. T = 100 steps in a CUDA graph,
// µs per step (median of 20 replays, three rounds), h after 100 steps against
// the compiled form.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/gru_rb_z_early.cu -lcublas -o build/exp/gru_rb_z_early
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <functional>
#include <vector>
#include "../../lib/Runtime/Cuda/PreloadedPartialsGemm.cu"
#include "step_harness.cuh"
constexpr int B = 64, H = 1024, T = 100, S = 8;

// Partials P[s] = A[:, 128s ..] · W[:, 128s ..]ᵀ for N = 1024 columns (16 column
// blocks) of one operand pair, or of two: blocks with blockIdx.x >= 16 take
// (a2, w2, c2) and, unless zWaits, never wait for the grid ahead.
__global__ void __launch_bounds__(128) dual(const float *a, const float *w, float *c, const float *a2, const float *w2, float *c2, int zWaits) {
  constexpr int n = H;
  __shared__ __align__(16) float as[64 * kPreloadStride];
  const bool second = blockIdx.x >= n / 64;
  if (second) { a = a2; w = w2; c = c2; }
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int n0 = (blockIdx.x % (n / 64)) * 64 + 16 * warp, k0 = blockIdx.y * kPreloadSlice;
  PreloadedTile tile;
  tile.load(w, H, n0, k0, g, t);
  if (!second || zWaits) gridWait();
  letNextLaunch();
  PreloadedTile::stage(as, a, H, k0, tid);
  float acc[8][4] = {};
  tile.multiply(acc, as, g, t);
  float *out = c + (size_t)blockIdx.y * 64 * n + n0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    int r = 8 * j + 2 * t;
    out[(size_t)r * n + g] = acc[j][0]; out[(size_t)(r + 1) * n + g] = acc[j][1];
    out[(size_t)r * n + g + 8] = acc[j][2]; out[(size_t)(r + 1) * n + g + 8] = acc[j][3];
  }
}

// Compiled form: P1 [S][B][2H] (r, z), P2 [S][B][H]; x [B][3H] (r, z, n).
__global__ void gru1(const float *p1, const float *x, const float *h, float *rh, float *z) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j], sz = x[b * 3 * H + H + j];
  for (int s = 0; s < S; ++s) { sr += p1[(size_t)s * B * 2 * H + b * 2 * H + j]; sz += p1[(size_t)s * B * 2 * H + b * 2 * H + H + j]; }
  rh[i] = sig(sr) * h[i]; z[i] = sig(sz);
}
__global__ void gru2(const float *p2, const float *x, const float *z, float *h) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j];
  for (int s = 0; s < S; ++s) sn += p2[(size_t)s * B * H + i];
  float nn = tanhf(sn); h[i] = (1 - z[i]) * nn + z[i] * h[i];
}
// z's sums in the second kernel: P1 [S][B][2H] (r, z) as compiled; the first
// kernel adds r's partials only, the second z's and n's.
__global__ void late1(const float *p1, const float *x, const float *h, float *rh) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j];
  for (int s = 0; s < S; ++s) sr += p1[(size_t)s * B * 2 * H + b * 2 * H + j];
  rh[i] = sig(sr) * h[i];
}
__global__ void late2(const float *p1, const float *p2, const float *x, float *h) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j], sz = x[b * 3 * H + H + j];
  for (int s = 0; s < S; ++s) { sn += p2[(size_t)s * B * H + i]; sz += p1[(size_t)s * B * 2 * H + b * 2 * H + H + j]; }
  float z = sig(sz), nn = tanhf(sn); h[i] = (1 - z) * nn + z * h[i];
}
// Split form: Pr [S][B][H], then Pn and Pz [S][B][H].
__global__ void split1(const float *pr, const float *x, const float *h, float *rh) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j];
  for (int s = 0; s < S; ++s) sr += pr[(size_t)s * B * H + i];
  rh[i] = sig(sr) * h[i];
}
__global__ void split2(const float *pn, const float *pz, const float *x, float *h) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j], sz = x[b * 3 * H + H + j];
  for (int s = 0; s < S; ++s) { sn += pn[(size_t)s * B * H + i]; sz += pz[(size_t)s * B * H + i]; }
  float z = sig(sz), nn = tanhf(sn); h[i] = (1 - z) * nn + z * h[i];
}

int main() {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *U, *X, *P1, *P2, *Pz, *h0, *rh, *z, *hv[5];
  CK(cudaMalloc(&U, 4 * 3 * H * H)); CK(cudaMalloc(&X, 4 * (size_t)T * B * 3 * H));
  CK(cudaMalloc(&P1, 4 * S * B * 2 * H)); CK(cudaMalloc(&P2, 4 * S * B * H)); CK(cudaMalloc(&Pz, 4 * S * B * H));
  CK(cudaMalloc(&h0, 4 * B * H)); CK(cudaMalloc(&rh, 4 * B * H)); CK(cudaMalloc(&z, 4 * B * H));
  for (auto &p : hv) CK(cudaMalloc(&p, 4 * B * H));
  fill<<<3 * H * H / 256, 256>>>(U, 3 * H * H, 0.06f, 1); fill<<<T * B * 3 * H / 256, 256>>>(X, (size_t)T * B * 3 * H, 2.f, 2);
  fill<<<B * H / 256, 256>>>(h0, B * H, 1.f, 3);
  CK(cudaDeviceSynchronize());
  CK(cudaFuncSetAttribute(rnn_preloaded_partials_gemm_slice128, cudaFuncAttributeMaxDynamicSharedMemorySize, kRuntimeSlice128Smem));
  auto early = [&](dim3 grid, dim3 block, size_t sm, auto kernel, auto... args) { launchEarly(s, grid, block, sm, kernel, args...); };
  auto runtimeGemm = [&](const float *W, const float *A, int n, float *C) { runtimePartials128(s, W, A, B, n, S, C); };
  const float *Ur = U, *Uz = U + (size_t)H * H, *Un = U + (size_t)2 * H * H;
  const int Gr = B * H / 256;
  // form 0: compiled; 1: split, z early; 2: split, z waits; 3: split with the runtime GEMM for all three products (z in a launch of its own);
  // 4: as compiled, z's partial sums in the second kernel.
  auto steps = [&](float *h, int form) { CK(cudaMemcpyAsync(h, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int t = 0; t < T; ++t) { const float *x = X + (size_t)t * B * 3 * H;
      if (form == 0) {
        runtimeGemm(U, h, 2 * H, P1); early(Gr, 256, 0, gru1, (const float *)P1, x, (const float *)h, rh, z);
        runtimeGemm(Un, rh, H, P2); early(Gr, 256, 0, gru2, (const float *)P2, x, (const float *)z, h);
      } else if (form == 4) {
        runtimeGemm(U, h, 2 * H, P1); early(Gr, 256, 0, late1, (const float *)P1, x, (const float *)h, rh);
        runtimeGemm(Un, rh, H, P2); early(Gr, 256, 0, late2, (const float *)P1, (const float *)P2, x, h);
      } else if (form == 3) {
        runtimeGemm(Ur, h, H, P1); early(Gr, 256, 0, split1, (const float *)P1, x, (const float *)h, rh);
        runtimeGemm(Uz, h, H, Pz); runtimeGemm(Un, rh, H, P2); early(Gr, 256, 0, split2, (const float *)P2, (const float *)Pz, x, h);
      } else {
        runtimeGemm(Ur, h, H, P1); early(Gr, 256, 0, split1, (const float *)P1, x, (const float *)h, rh);
        early(dim3(2 * H / 64, S), 128, 0, dual, (const float *)rh, Un, P2, (const float *)h, Uz, Pz, form == 2 ? 1 : 0);
        early(Gr, 256, 0, split2, (const float *)P2, (const float *)Pz, x, h);
      } } };
  struct Variant { const char *name; cudaGraphExec_t graph; float *h; };
  const char *names[] = {"compiled form", "split, z early", "split, z waits", "split, z own launch", "z's sums in kernel 2"};
  std::vector<Variant> vs;
  for (int f = 0; f < 5; ++f) vs.push_back({names[f], captureGraph(s, [&, f] { steps(hv[f], f); }), hv[f]});
  for (int round = 0; round < 3; ++round) {
    printf("round %d:\n", round);
    for (auto &v : vs) printf("  %-24s %6.2f us/step\n", v.name, usPerStep(v.graph, s, T));
  }
  for (auto &v : vs) CK(cudaGraphLaunch(v.graph, s));
  CK(cudaStreamSynchronize(s));
  for (auto &v : vs) { auto d = maxAbsDiff(vs[0].h, v.h, B * H);
    printf("%-24s max abs diff against the compiled form after %d steps: %.2e (max |h| %.2e)\n", v.name, T, d.first, d.second); }
  return 0;
}
