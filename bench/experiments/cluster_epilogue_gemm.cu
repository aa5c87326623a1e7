// Experiment: the preloaded partials GEMM (lib/Runtime/Cuda/PreloadedPartialsGemm.cu)
// adding its K slices itself instead of leaving 8 partials to the step's
// pointwise kernel, and then with that kernel's work fused into the GEMM's
// epilogue, so that a step of the GRU with the reset gate first is two
// launches instead of four.
//
// As built, a GRU-reset-before step at B = 64, H = 1024 is GEMM (8 partials
// of [64, 2048]), kernel (adds them: 4 MiB read), GEMM (8 partials of
// [64, 1024]), kernel: four dependent launches and 12 MiB of partials
// written and read per step. The 8 blocks of one column tile (one per K
// slice, 64 x 64 outputs each) add their tiles either
//  - in a thread-block cluster of 8: each writes its tile to its shared
//    memory, and block r of the cluster adds rows 8r .. 8r + 7 of all eight
//    through distributed shared memory ("cluster"), or
//  - through global memory: each writes its tile, counts in on a per-tile
//    counter, waits until all 8 have, then adds its 8 rows of the 8 tiles
//    ("flags"), or
//  - with atomic adds into a zeroed result ("atomics", a memset per product).
// cgemm<kStore> stores the sum as one [M, N] matrix (the kernels then read 1
// partial instead of 8); cgemm<kGru1> / <kGru2> apply the GRU's first /
// second kernel in the epilogue instead. Controls: the runtime kernel's
// partials launched as clusters without using them ("partials as clusters"),
// plus one cluster barrier ("1 barrier"), the fused form without early
// launch ("no early"); the LSTM's product through the cluster form.
// Every variant: T = 100 steps in a CUDA graph, µs per step (median of 20
// replays, three rounds), h after 100 steps against the runtime partials.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/cluster_epilogue_gemm.cu -lcublas -o build/exp/cluster_epilogue_gemm
#include <cooperative_groups.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <functional>
#include <vector>
#include "../../lib/Runtime/Cuda/PreloadedPartialsGemm.cu"
#include "step_harness.cuh"
namespace cg = cooperative_groups;
constexpr int B = 64, H = 1024, T = 100;

enum Epilogue { kStore, kGru1, kGru2, kStoreAtomic, kPartials, kOneSync };
// Where the slices are added: in the cluster's shared memory, or through
// global memory after the 8 blocks of a column tile have counted in.
enum Reduce { kCluster, kFlags };
// What the epilogues read and write besides the product.
struct StepArgs { const float *x; int xld; const float *h; float *rh; float *z; float *hout; unsigned *counters; float *partials; };

// Grid (N / 64, 8), cluster (1, 8, 1), 128 threads: block (c, s) multiplies
// columns 64c .. 64c + 63 over K slice s (128 wide) with its weights in
// registers (loaded before the wait), as the runtime's slice-128 kernel does.
template <Epilogue kEpi, Reduce kReduce = kCluster>
__global__ void __launch_bounds__(128) cgemm(const float *a, int lda, const float *w, int ldw, float *c, int n, StepArgs s) {
  constexpr int tileLd = 68;  // 68: the fragment writes cover 32 banks
  extern __shared__ float4 smem4[];
  float *as = reinterpret_cast<float *>(smem4);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * 64 + 16 * warp, k0 = blockIdx.y * kPreloadSlice;
  PreloadedTile weights;
  weights.load(w, ldw, n0, k0, g, t);
  gridWait();
  letNextLaunch();
  PreloadedTile::stage(as, a, lda, k0, tid);
  float acc[8][4] = {};
  weights.multiply(acc, as, g, t);
  if constexpr (kEpi == kPartials) {  // As the runtime kernel: slot blockIdx.y, no reduction.
    float *out = c + (size_t)blockIdx.y * 64 * n;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      int r = 8 * j + 2 * t;
      out[(size_t)r * n + n0 + g] = acc[j][0]; out[(size_t)(r + 1) * n + n0 + g] = acc[j][1];
      out[(size_t)r * n + n0 + g + 8] = acc[j][2]; out[(size_t)(r + 1) * n + n0 + g + 8] = acc[j][3];
    }
    if (s.x) cg::this_cluster().sync();  // With x set: one cluster barrier, nothing exchanged.
    return;
  } else if constexpr (kEpi == kStoreAtomic) {  // No cluster: every slice adds into C (zeroed before).
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      int r = 8 * j + 2 * t;
      atomicAdd(c + (size_t)r * n + n0 + g, acc[j][0]); atomicAdd(c + (size_t)(r + 1) * n + n0 + g, acc[j][1]);
      atomicAdd(c + (size_t)r * n + n0 + g + 8, acc[j][2]); atomicAdd(c + (size_t)(r + 1) * n + n0 + g + 8, acc[j][3]);
    }
    return;
  } else {
  int row, col;
  float4 v = make_float4(0, 0, 0, 0);
  if constexpr (kReduce == kCluster) {
  // The partial tile into this block's shared memory (A's staging is done).
  __syncthreads();
  float *tile = as;  // [64][tileLd]
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    int r = 8 * j + 2 * t, col = 16 * warp + g;
    tile[r * tileLd + col] = acc[j][0]; tile[(r + 1) * tileLd + col] = acc[j][1];
    tile[r * tileLd + col + 8] = acc[j][2]; tile[(r + 1) * tileLd + col + 8] = acc[j][3];
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int rank = cluster.block_rank();
  row = 8 * rank + tid / 16; col = 4 * (tid % 16);
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const float *theirs = cluster.map_shared_rank(tile, q);
    float4 p = *reinterpret_cast<const float4 *>(theirs + row * tileLd + col);
    v.x += p.x; v.y += p.y; v.z += p.z; v.w += p.w;
  }
  cluster.sync();  // No block leaves while others still read its tile.
  } else {
  // The partial tile to global memory, then count in; once all 8 slices of
  // the column tile have, this block adds rows 8s .. 8s + 7 of the 8 tiles.
  // All 8 blocks are resident by then: the grid fits the GPU, and the grid
  // behind it launches only after every block here has passed its trigger.
  float *mine = s.partials + (size_t)blockIdx.y * 64 * n + blockIdx.x * 64;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    int r = 8 * j + 2 * t, cl = 16 * warp + g;
    mine[(size_t)r * n + cl] = acc[j][0]; mine[(size_t)(r + 1) * n + cl] = acc[j][1];
    mine[(size_t)r * n + cl + 8] = acc[j][2]; mine[(size_t)(r + 1) * n + cl + 8] = acc[j][3];
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    unsigned *counter = s.counters + blockIdx.x;
    unsigned old = atomicAdd(counter, 1u), target = (old / 8 + 1) * 8, now;
    do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(counter)); } while ((int)(now - target) < 0);
  }
  __syncthreads();
  row = 8 * blockIdx.y + tid / 16; col = 4 * (tid % 16);
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    float4 p = __ldcg(reinterpret_cast<const float4 *>(s.partials + (size_t)q * 64 * n + (size_t)row * n + blockIdx.x * 64 + col));
    v.x += p.x; v.y += p.y; v.z += p.z; v.w += p.w;
  }
  }
  const int gcol = blockIdx.x * 64 + col;  // First of this thread's four columns.
  float out[4] = {v.x, v.y, v.z, v.w};
  if constexpr (kEpi == kStore) {
    *reinterpret_cast<float4 *>(c + (size_t)row * n + gcol) = v;
  } else if constexpr (kEpi == kGru1) {  // Columns [0, H): r; [H, 2H): z. x: (r, z, n) pre-activations.
    const float *x = s.x + (size_t)row * s.xld + gcol;
    if (gcol < H) {
      const float *h = s.h + (size_t)row * H + gcol; float *rh = s.rh + (size_t)row * H + gcol;
#pragma unroll
      for (int e = 0; e < 4; ++e) rh[e] = sig(out[e] + x[e]) * h[e];
    } else {
      float *z = s.z + (size_t)row * H + gcol - H;
#pragma unroll
      for (int e = 0; e < 4; ++e) z[e] = sig(out[e] + x[e]);
    }
  } else {  // kGru2: columns [0, H) of n.
    const float *x = s.x + (size_t)row * s.xld + 2 * H + gcol;
    const float *z = s.z + (size_t)row * H + gcol, *h = s.h + (size_t)row * H + gcol;
    float *ho = s.hout + (size_t)row * H + gcol;
#pragma unroll
    for (int e = 0; e < 4; ++e) { float nn = tanhf(out[e] + x[e]); ho[e] = (1 - z[e]) * nn + z[e] * h[e]; }
  }
  }
}

// The step's pointwise kernels, as rnn-compile's (trigger, then wait).
__global__ void gru1(const float *p, int s1, const float *x, const float *h, float *rh, float *z) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j], sz = x[b * 3 * H + H + j];
  for (int q = 0; q < s1; ++q) { sr += p[(size_t)q * B * 2 * H + b * 2 * H + j]; sz += p[(size_t)q * B * 2 * H + b * 2 * H + H + j]; }
  rh[i] = sig(sr) * h[i]; z[i] = sig(sz);
}
__global__ void gru2(const float *p, int s2, const float *x, const float *z, float *h) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j];
  for (int q = 0; q < s2; ++q) sn += p[(size_t)q * B * H + i];
  float nn = tanhf(sn); h[i] = (1 - z[i]) * nn + z[i] * h[i];
}
__global__ void lstm(const float *g, int sl, const float *x, float *c, float *h) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; const float *xb = x + (size_t)b * 4 * H; float v[4];
  for (int q = 0; q < 4; ++q) { v[q] = xb[q * H + j]; for (int s = 0; s < sl; ++s) v[q] += g[(size_t)s * B * 4 * H + (size_t)b * 4 * H + q * H + j]; }
  float cn = sig(v[1]) * c[i] + sig(v[0]) * tanhf(v[2]); c[i] = cn; h[i] = sig(v[3]) * tanhf(cn);
}

int main() {
  cublasHandle_t hd; CK(cublasCreate(&hd));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  void *wsp; CK(cudaMalloc(&wsp, 32 << 20)); CK(cublasSetWorkspace(hd, wsp, 32 << 20));
  float *U, *UL, *X, *XL, *P1, *P2, *G, *h0, *h1, *rh, *z, *c;
  float *hG[10], *hL[4];
  CK(cudaMalloc(&U, 4 * 3 * H * H)); CK(cudaMalloc(&UL, 4 * 4 * H * H));
  CK(cudaMalloc(&X, 4 * (size_t)T * B * 3 * H)); CK(cudaMalloc(&XL, 4 * (size_t)T * B * 4 * H));
  CK(cudaMalloc(&P1, 4 * 8 * B * 2 * H)); CK(cudaMalloc(&P2, 4 * 8 * B * H)); CK(cudaMalloc(&G, 4 * 8 * B * 4 * H));
  CK(cudaMalloc(&h0, 4 * B * H)); CK(cudaMalloc(&h1, 4 * B * H)); CK(cudaMalloc(&rh, 4 * B * H)); CK(cudaMalloc(&z, 4 * B * H)); CK(cudaMalloc(&c, 4 * B * H));
  float *Q1, *Q2; unsigned *counters;  // Reduced products; column-tile counters (never reset: targets count on).
  CK(cudaMalloc(&Q1, 4 * B * 2 * H)); CK(cudaMalloc(&Q2, 4 * B * H)); CK(cudaMalloc(&counters, 4 * 128)); CK(cudaMemset(counters, 0, 4 * 128));
  for (int v = 0; v < 10; ++v) { CK(cudaMalloc(&hG[v], 4 * B * H)); if (v < 4) CK(cudaMalloc(&hL[v], 4 * B * H)); }
  fill<<<3 * H * H / 256, 256>>>(U, 3 * H * H, 0.06f, 1); fill<<<T * B * 3 * H / 256, 256>>>(X, (size_t)T * B * 3 * H, 2.f, 2);
  fill<<<4 * H * H / 256, 256>>>(UL, 4 * H * H, 0.06f, 4); fill<<<T * B * 4 * H / 256, 256>>>(XL, (size_t)T * B * 4 * H, 2.f, 5);
  fill<<<B * H / 256, 256>>>(h0, B * H, 1.f, 3);
  CK(cudaDeviceSynchronize());
  const size_t smem = kRuntimeSlice128Smem;  // A's staged slice, then the partial tile.
  CK(cudaFuncSetAttribute(cgemm<kStore>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(cgemm<kGru1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(cgemm<kGru2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(cgemm<kStore, kFlags>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(cgemm<kGru1, kFlags>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(cgemm<kGru2, kFlags>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(cgemm<kPartials>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(cgemm<kStoreAtomic>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  float one = 1, zero = 0; const int Gr = B * H / 256;
  bool pdl = true;  // Form 6 launches the cluster GEMMs without programmatic serialization.
  auto launch = [&](dim3 grid, dim3 block, size_t sm, bool cluster, auto kernel, auto... args) {
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = block; cfg.dynamicSmemBytes = sm; cfg.stream = s;
    cudaLaunchAttribute at[2]; at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; at[0].val.programmaticStreamSerializationAllowed = 1;
    at[1].id = cudaLaunchAttributeClusterDimension; at[1].val.clusterDim.x = 1; at[1].val.clusterDim.y = 8; at[1].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = cluster ? 2 : 1;
    if (cluster && !pdl) { cfg.attrs = at + 1; cfg.numAttrs = 1; } CK(cudaLaunchKernelEx(&cfg, kernel, args...)); };
  auto runtimePartials = [&](const float *W, const float *A, int n, float *C) { runtimePartials128(s, W, A, B, n, 8, C); };
  StepArgs none = {};
  // GRU step forms: 0 runtime partials + kernels, 1 cluster-reduced + kernels (1 partial),
  // 2 fused epilogues (two launches), 3 atomics into a zeroed C + kernels.
  auto gruSteps = [&](float *h, int form) { CK(cudaMemcpyAsync(h, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int t = 0; t < T; ++t) { const float *x = X + (size_t)t * B * 3 * H;
      const float *Un = U + (size_t)2 * H * H;
      if (form == 0) {
        runtimePartials(U, h, 2 * H, P1); launch(Gr, 256, 0, false, gru1, (const float *)P1, 8, x, (const float *)h, rh, z);
        runtimePartials(Un, rh, H, P2); launch(Gr, 256, 0, false, gru2, (const float *)P2, 8, x, (const float *)z, h);
      } else if (form == 1) {
        launch(dim3(2 * H / 64, 8), 128, smem, true, cgemm<kStore>, (const float *)h, H, (const float *)U, H, P1, 2 * H, none);
        launch(Gr, 256, 0, false, gru1, (const float *)P1, 1, x, (const float *)h, rh, z);
        launch(dim3(H / 64, 8), 128, smem, true, cgemm<kStore>, (const float *)rh, H, Un, H, P2, H, none);
        launch(Gr, 256, 0, false, gru2, (const float *)P2, 1, x, (const float *)z, h);
      } else if (form == 2) {
        StepArgs a1 = {x, 3 * H, h, rh, z, nullptr}, a2 = {x, 3 * H, h, nullptr, z, h};
        launch(dim3(2 * H / 64, 8), 128, smem, true, cgemm<kGru1>, (const float *)h, H, (const float *)U, H, P1, 2 * H, a1);
        launch(dim3(H / 64, 8), 128, smem, true, cgemm<kGru2>, (const float *)rh, H, Un, H, P2, H, a2);
      } else if (form == 4 || form == 5) {  // Partials as the runtime's, launched as clusters (5: plus one cluster barrier).
        StepArgs b = {form == 5 ? x : nullptr};
        launch(dim3(2 * H / 64, 8), 128, smem, true, cgemm<kPartials>, (const float *)h, H, (const float *)U, H, P1, 2 * H, b);
        launch(Gr, 256, 0, false, gru1, (const float *)P1, 8, x, (const float *)h, rh, z);
        launch(dim3(H / 64, 8), 128, smem, true, cgemm<kPartials>, (const float *)rh, H, Un, H, P2, H, b);
        launch(Gr, 256, 0, false, gru2, (const float *)P2, 8, x, (const float *)z, h);
      } else if (form == 7) {  // Reduced through global memory and counters, then the kernels.
        StepArgs f1 = {}, f2 = {}; f1.counters = counters; f1.partials = P1; f2.counters = counters + 64; f2.partials = P2;
        launch(dim3(2 * H / 64, 8), 128, smem, false, cgemm<kStore, kFlags>, (const float *)h, H, (const float *)U, H, Q1, 2 * H, f1);
        launch(Gr, 256, 0, false, gru1, (const float *)Q1, 1, x, (const float *)h, rh, z);
        launch(dim3(H / 64, 8), 128, smem, false, cgemm<kStore, kFlags>, (const float *)rh, H, Un, H, Q2, H, f2);
        launch(Gr, 256, 0, false, gru2, (const float *)Q2, 1, x, (const float *)z, h);
      } else if (form == 8) {  // Reduced through global memory, fused epilogues: two launches a step.
        StepArgs a1 = {x, 3 * H, h, rh, z, nullptr, counters, P1}, a2 = {x, 3 * H, h, nullptr, z, h, counters + 64, P2};
        launch(dim3(2 * H / 64, 8), 128, smem, false, cgemm<kGru1, kFlags>, (const float *)h, H, (const float *)U, H, Q1, 2 * H, a1);
        launch(dim3(H / 64, 8), 128, smem, false, cgemm<kGru2, kFlags>, (const float *)rh, H, Un, H, Q2, H, a2);
      } else if (form == 6) {  // Fused epilogues, clusters launched in plain stream order.
        pdl = false;
        StepArgs a1 = {x, 3 * H, h, rh, z, nullptr}, a2 = {x, 3 * H, h, nullptr, z, h};
        launch(dim3(2 * H / 64, 8), 128, smem, true, cgemm<kGru1>, (const float *)h, H, (const float *)U, H, P1, 2 * H, a1);
        launch(dim3(H / 64, 8), 128, smem, true, cgemm<kGru2>, (const float *)rh, H, Un, H, P2, H, a2);
        pdl = true;
      } else {
        CK(cudaMemsetAsync(P1, 0, 4 * B * 2 * H, s));
        launch(dim3(2 * H / 64, 8), 128, smem, false, cgemm<kStoreAtomic>, (const float *)h, H, (const float *)U, H, P1, 2 * H, none);
        launch(Gr, 256, 0, false, gru1, (const float *)P1, 1, x, (const float *)h, rh, z);
        CK(cudaMemsetAsync(P2, 0, 4 * B * H, s));
        launch(dim3(H / 64, 8), 128, smem, false, cgemm<kStoreAtomic>, (const float *)rh, H, Un, H, P2, H, none);
        launch(Gr, 256, 0, false, gru2, (const float *)P2, 1, x, (const float *)z, h);
      } } };
  // LSTM step forms: 0 cuBLAS GEMM + kernel, 1 cluster-reduced + kernel.
  auto lstmSteps = [&](float *h, int form) { CK(cudaMemcpyAsync(h, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s)); CK(cudaMemsetAsync(c, 0, 4 * B * H, s));
    for (int t = 0; t < T; ++t) { const float *x = XL + (size_t)t * B * 4 * H;
      if (form == 0) CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, 4 * H, B, H, &one, UL, CUDA_R_32F, H, h, CUDA_R_32F, H, &zero, G, CUDA_R_32F, 4 * H,
                                     CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      else launch(dim3(4 * H / 64, 8), 128, smem, true, cgemm<kStore>, (const float *)h, H, (const float *)UL, H, G, 4 * H, none);
      launch(Gr, 256, 0, false, lstm, (const float *)G, 1, x, c, h); } };
  struct Variant { const char *name; cudaGraphExec_t graph; float *h; bool gru; };
  std::vector<Variant> vs;
  vs.push_back({"LSTM cuBLAS", captureGraph(s, [&] { lstmSteps(hL[0], 0); }), hL[0], false});
  vs.push_back({"LSTM cluster-reduced", captureGraph(s, [&] { lstmSteps(hL[1], 1); }), hL[1], false});
  vs.push_back({"GRU-rb runtime partials", captureGraph(s, [&] { gruSteps(hG[0], 0); }), hG[0], true});
  vs.push_back({"GRU-rb cluster-reduced", captureGraph(s, [&] { gruSteps(hG[1], 1); }), hG[1], true});
  vs.push_back({"GRU-rb fused epilogues", captureGraph(s, [&] { gruSteps(hG[2], 2); }), hG[2], true});
  vs.push_back({"GRU-rb atomics", captureGraph(s, [&] { gruSteps(hG[3], 3); }), hG[3], true});
  vs.push_back({"GRU-rb partials as clusters", captureGraph(s, [&] { gruSteps(hG[4], 4); }), hG[4], true});
  vs.push_back({"GRU-rb partials, 1 barrier", captureGraph(s, [&] { gruSteps(hG[5], 5); }), hG[5], true});
  vs.push_back({"GRU-rb flags-reduced", captureGraph(s, [&] { gruSteps(hG[7], 7); }), hG[7], true});
  vs.push_back({"GRU-rb flags, fused epilogues", captureGraph(s, [&] { gruSteps(hG[8], 8); }), hG[8], true});
  vs.push_back({"GRU-rb fused, no early", captureGraph(s, [&] { gruSteps(hG[6], 6); }), hG[6], true});
  for (int round = 0; round < 3; ++round) {
    std::vector<float> us; for (auto &v : vs) us.push_back(usPerStep(v.graph, s, T));
    printf("round %d:\n", round);
    for (size_t k = 0; k < vs.size(); ++k) printf("  %-28s %6.2f us/step  %.2fx LSTM cuBLAS\n", vs[k].name, us[k], us[k] / us[0]);
  }
  for (auto &v : vs) CK(cudaGraphLaunch(v.graph, s));
  CK(cudaStreamSynchronize(s));
  for (auto &v : vs) { auto d = maxAbsDiff(v.gru ? hG[0] : hL[0], v.h, B * H);
    printf("%-28s against %s after %d steps: max abs diff %.2e (max |h| %.2e)\n", v.name, v.gru ? "runtime partials" : "cuBLAS", T, d.first, d.second); }
  return 0;
}
