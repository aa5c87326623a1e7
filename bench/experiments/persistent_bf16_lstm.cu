// Experiment: the bf16 LSTM recurrence at `wide` (B = 32, H = 2048, T = 50)
// as one persistent kernel, in the form that made the GRU's step 1.66x
// faster than the per-step path (persistent_bf16_gru.cu): against the
// per-step path (cuBLAS GEMM streaming U's 32 MiB from L2, plus a fused
// pointwise kernel launched early, in a CUDA graph).
//
// 128 blocks (one per SM, all resident), each owning 16 hidden units and
// their 64 rows of U (i, f, g, o; 256 KiB, more than fits in registers):
// warp (q, p) of 12 holds gate q's 16 rows (q < 3) over the K quarter p in
// registers (128 a lane); gate o's 16 rows (64 KiB) stay in shared memory and
// the three warps of a quarter share them by batch tiles (2, 1, 1). A step:
// the grid barrier (a counter), h_{t-1} multicast to the two blocks of a
// cluster in four tiles of 8 batch rows (one mbarrier each; the product
// starts on the first), each K quarter's sums stored in a region of its own
// and added by the LSTM's pointwise step for the block's 16 units (c kept in
// registers, the step's projection prefetched into L1 before the barrier),
// one red.release per step. Outputs of all 50 steps against the
// per-step path's.
// The first version added the sums into one shared buffer with shared-memory
// atomics (and split gate o by thirds of each quarter): 17.3 us per step
// against 11.3 on the H100, of which the atomics took 7.6 (9.7 with the sums
// stored instead, results wrong: a timing-only ablation, since removed).
// LSTM: i, f, g, o = σ, σ, tanh, σ of x + U h (x = W x_t + b precomputed, f32
// [T, B, 4H]); c' = f c + i g; h' = o tanh(c').
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/persistent_bf16_lstm.cu -lcublas -o build/exp/persistent_bf16_lstm
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <functional>
#include <vector>
#include "../../lib/Runtime/Cuda/PreloadedPartialsGemm.cu"
#include "step_harness.cuh"
#include "persistent_step.cuh"

constexpr int B = 32, H = 2048, G = 4 * H, T = 50;
constexpr int kBlocks = H / 16, kThreads = 384, kCluster = 2;
constexpr int kLd = H + 8;       // padded bf16 rows of h and of gate o's weights
constexpr int kSumsLd = 64 + 1;  // the block's 64 gate columns per batch row, padded
constexpr size_t kHBytes = (size_t)B * kLd * 2, kWoBytes = (size_t)16 * kLd * 2;
constexpr size_t kSmem = kHBytes + kWoBytes + (size_t)4 * B * kSumsLd * 4;

__device__ unsigned long long probe[64][5];
__device__ int probeBlock = -1;

__global__ void __launch_bounds__(kThreads, 1)
persistentLstm(const __nv_bfloat16 *u, const float *x, const float *c0, __nv_bfloat16 *hbuf, __nv_bfloat16 *ys,
               unsigned *counter, unsigned base, int steps) {
  extern __shared__ float4 smem4[];
  char *raw = reinterpret_cast<char *>(smem4);
  auto *hs = reinterpret_cast<__nv_bfloat16 *>(raw);                 // [B][kLd]
  auto *wo = reinterpret_cast<__nv_bfloat16 *>(raw + kHBytes);       // [16][kLd]: gate o's rows
  float *sums = reinterpret_cast<float *>(raw + kHBytes + kWoBytes);  // [4 quarters][B][kSumsLd]
  __shared__ __align__(8) unsigned long long rowsIn[4];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int unit0 = blockIdx.x * 16, gate = warp / 4, quarter = warp % 4;
  const unsigned rank = clusterRank();
  const bool probing = blockIdx.x == probeBlock && tid == 0;
  if (tid == 0) { for (auto &bar : rowsIn) initBarrier(&bar); }
  clusterSync();
  // Gate o's rows into shared memory; the cell state; the sums start at 0.
  for (int v = tid; v < 16 * H / 8; v += kThreads) {
    int row = v / (H / 8), col = 8 * (v % (H / 8));
    copy16(wo + row * kLd + col, u + (size_t)(3 * H + unit0 + row) * H + col);
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  // The cell state of this thread's (unit, batch row) pairs p = tid, tid + 384.
  float cReg[2];
  for (int k = 0; k < 2; ++k) { int p = tid + k * kThreads; cReg[k] = p < 16 * B ? c0[(size_t)(p / 16) * H + unit0 + p % 16] : 0; }
  // Gates i, f, g in registers as mma A fragments.
  unsigned wr[32][4];
  loadFragmentsBf16(wr, u + (size_t)(gate * H + unit0 + g) * H + 512 * quarter, u + (size_t)(gate * H + unit0 + g + 8) * H + 512 * quarter, t);
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  // This warp's batch tiles of gate o (over its quarter): warp 0 of a quarter tiles 0 and 1, warps 1 and 2 tiles 2 and 3.
  auto ownsO = [&](int nt) { return gate == 0 ? nt < 2 : nt == gate + 1; };
  const __nv_bfloat16 *aO = wo + (lane % 8 + 8 * ((lane / 8) % 2)) * kLd + 8 * (lane / 16) + 512 * quarter;
  const __nv_bfloat16 *bBase = hs + (lane % 8) * kLd + 512 * quarter + 8 * ((lane / 8) % 2);
  for (int step = 0; step < steps; ++step) {
    const __nv_bfloat16 *hPrev = hbuf + (size_t)(step % 2) * B * H;
    __nv_bfloat16 *hNext = hbuf + (size_t)((step + 1) % 2) * B * H;
    if (probing) probe[step][0] = nowNs();
    // The step's projection does not depend on h: into L1 before the barrier
    // (shared memory has no room left for it).
    for (int k = 0; k < 2; ++k) {
      int p = tid + k * kThreads;
      if (p < 16 * B)
        for (int q = 0; q < 4; ++q)
          asm volatile("prefetch.global.L1 [%0];" ::"l"(x + (size_t)step * B * G + (size_t)(p / 16) * G + q * H + unit0 + p % 16));
    }
    if (step > 0) waitForCount(counter, base + kBlocks * step);
    if (probing) probe[step][1] = nowNs();
    if (tid == 0) {
      for (int nt = 0; nt < 4; ++nt) {
        expectBytes(&rowsIn[nt], 8 * H * 2);
        for (int row = 8 * nt + (int)rank; row < 8 * nt + 8; row += kCluster)
          multicastCopy(hs + row * kLd, hPrev + (size_t)row * H, H * 2, &rowsIn[nt], (1 << kCluster) - 1);
      }
    }
    if (probing) probe[step][2] = nowNs();
    float *mine = sums + quarter * B * kSumsLd;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      waitPhase(&rowsIn[nt], step & 1);
      const __nv_bfloat16 *bTile = bBase + nt * 8 * kLd;
      const int b = nt * 8 + 2 * t;
      float acc[4] = {};
#pragma unroll
      for (int kk = 0; kk < 32; ++kk) {
        unsigned b0, b1;
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(smem32(bTile + 16 * kk)));
        mmaBf16(acc, wr[kk], b0, b1);
      }
      // acc: rows (g, g + 8) of the warp's gate, batch rows b, b + 1.
      mine[b * kSumsLd + gate * 16 + g] = acc[0]; mine[(b + 1) * kSumsLd + gate * 16 + g] = acc[1];
      mine[b * kSumsLd + gate * 16 + g + 8] = acc[2]; mine[(b + 1) * kSumsLd + gate * 16 + g + 8] = acc[3];
      if (ownsO(nt)) {
        float accO[4] = {};
#pragma unroll
        for (int kk = 0; kk < 32; ++kk) {
          unsigned a[4], b0, b1;
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                       : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(smem32(aO + 16 * kk)));
          asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(smem32(bTile + 16 * kk)));
          mmaBf16(accO, a, b0, b1);
        }
        mine[b * kSumsLd + 48 + g] = accO[0]; mine[(b + 1) * kSumsLd + 48 + g] = accO[1];
        mine[b * kSumsLd + 48 + g + 8] = accO[2]; mine[(b + 1) * kSumsLd + 48 + g + 8] = accO[3];
      }
    }
    __syncthreads();
    if (probing) probe[step][3] = nowNs();
    const float *xt = x + (size_t)step * B * G;
    for (int k = 0; k < 2; ++k) {
      int p = tid + k * kThreads;
      if (p >= 16 * B) break;
      int unit = p % 16, b = p / 16;
      const float *xb = xt + (size_t)b * G + unit0 + unit;
      auto sum = [&](int row) { const float *q = sums + b * kSumsLd + row; return q[0] + q[B * kSumsLd] + q[2 * B * kSumsLd] + q[3 * B * kSumsLd]; };
      float i = sig(xb[0] + sum(unit)), f = sig(xb[H] + sum(16 + unit)), gg = tanhf(xb[2 * H] + sum(32 + unit)), o = sig(xb[3 * H] + sum(48 + unit));
      float c = f * cReg[k] + i * gg;
      cReg[k] = c;
      __nv_bfloat16 out = __float2bfloat16(o * tanhf(c));
      hNext[(size_t)b * H + unit0 + unit] = out;
      ys[(size_t)step * B * H + (size_t)b * H + unit0 + unit] = out;
    }
    __syncthreads();
    releaseStep(counter);
    if (probing) probe[step][4] = nowNs();
  }
}

// The per-step path's pointwise kernel: gates from the GEMM (f32 [B, 4H]).
__global__ void lstmStep(const float *gh, const float *x, float *c, __nv_bfloat16 *hNext, __nv_bfloat16 *y) {
  triggerAndWait();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= B * H) return;
  int b = i / H, j = i % H;
  const float *gb = gh + (size_t)b * G, *xb = x + (size_t)b * G;
  float ig = sig(xb[j] + gb[j]), fg = sig(xb[H + j] + gb[H + j]), gg = tanhf(xb[2 * H + j] + gb[2 * H + j]), og = sig(xb[3 * H + j] + gb[3 * H + j]);
  float cn = fg * c[i] + ig * gg;
  c[i] = cn;
  __nv_bfloat16 out = __float2bfloat16(og * tanhf(cn));
  hNext[i] = out;
  y[i] = out;
}

int main() {
  CublasStream cs = cublasOnNewStream();
  cublasHandle_t hd = cs.handle; cudaStream_t s = cs.stream;
  float *uf, *x, *h0f, *c0, *cA, *gh;
  __nv_bfloat16 *u, *h0, *hA, *hB, *ysA, *ysB;
  unsigned *counter;
  CK(cudaMalloc(&uf, 4 * (size_t)G * H)); CK(cudaMalloc(&u, 2 * (size_t)G * H));
  CK(cudaMalloc(&x, 4 * (size_t)T * B * G)); CK(cudaMalloc(&gh, 4 * (size_t)B * G));
  CK(cudaMalloc(&h0f, 4 * B * H)); CK(cudaMalloc(&h0, 2 * B * H)); CK(cudaMalloc(&c0, 4 * B * H)); CK(cudaMalloc(&cA, 4 * B * H));
  CK(cudaMalloc(&hA, 2 * 2 * B * H)); CK(cudaMalloc(&hB, 2 * 2 * B * H));
  CK(cudaMalloc(&ysA, 2 * (size_t)T * B * H)); CK(cudaMalloc(&ysB, 2 * (size_t)T * B * H));
  CK(cudaMalloc(&counter, 4)); CK(cudaMemset(counter, 0, 4));
  fill<<<G * H / 256, 256>>>(uf, (size_t)G * H, 0.06f, 1); toBf16<<<G * H / 256, 256>>>(uf, u, (size_t)G * H);
  fill<<<T * B * G / 256, 256>>>(x, (size_t)T * B * G, 2.f, 2);
  fill<<<B * H / 256, 256>>>(h0f, B * H, 1.f, 3); toBf16<<<B * H / 256, 256>>>(h0f, h0, B * H);
  fill<<<B * H / 256, 256>>>(c0, B * H, 1.f, 5);
  CK(cudaDeviceSynchronize());
  CK(cudaFuncSetAttribute(persistentLstm, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kSmem));
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = kBlocks; cfg.blockDim = kThreads; cfg.dynamicSmemBytes = kSmem; cfg.stream = s;
  cudaLaunchAttribute at; at.id = cudaLaunchAttributeClusterDimension; at.val.clusterDim.x = kCluster; at.val.clusterDim.y = 1; at.val.clusterDim.z = 1;
  cfg.attrs = &at; cfg.numAttrs = 1;
  int clusters = 0;
  CK(cudaOccupancyMaxActiveClusters(&clusters, persistentLstm, &cfg));
  printf("persistent kernel: %d blocks of %d threads, %zu bytes of shared memory; clusters of %d resident at once: %d (the grid has %d)\n",
         kBlocks, kThreads, kSmem, kCluster, clusters, kBlocks / kCluster);
  if (clusters < kBlocks / kCluster) { printf("does not fit\n"); return 1; }
  auto perStep = [&] {
    CK(cudaMemcpyAsync(hA, h0, 2 * B * H, cudaMemcpyDeviceToDevice, s));
    CK(cudaMemcpyAsync(cA, c0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int step = 0; step < T; ++step) {
      const __nv_bfloat16 *hp = hA + (size_t)(step % 2) * B * H;
      __nv_bfloat16 *hn = hA + (size_t)((step + 1) % 2) * B * H;
      recurrentGemmBf16(hd, u, hp, B, G, H, gh);
      launchEarly(s, dim3(B * H / 256), dim3(256), 0, lstmStep, (const float *)gh, (const float *)(x + (size_t)step * B * G), cA, hn,
                  ysA + (size_t)step * B * H);
    } };
  unsigned launches = 0;
  auto persistent = [&] {
    CK(cudaMemcpyAsync(hB, h0, 2 * B * H, cudaMemcpyDeviceToDevice, s));
    unsigned base = launches * kBlocks * T;
    int steps = T;
    const __nv_bfloat16 *uu = u; const float *xx = x, *cc0 = c0; __nv_bfloat16 *hh = hB, *yy = ysB; unsigned *cc = counter;
    void *args[] = {&uu, &xx, &cc0, &hh, &yy, &cc, &base, &steps};
    CK(cudaLaunchKernelExC(&cfg, (const void *)persistentLstm, args));
    ++launches; };
  cudaGraphExec_t graph = captureGraph(s, perStep);
  auto timePersistent = [&] { return usPerStepOf(s, persistent, T); };
  for (int round = 0; round < 3; ++round) {
    float a = usPerStep(graph, s, T), b = timePersistent();
    printf("round %d, us per step: per-step path (cuBLAS GEMM + kernel, graph) %.2f; persistent %.2f\n", round, a, b);
  }
  for (int pb : {0, 77}) {
    CK(cudaMemcpyToSymbol(probeBlock, &pb, sizeof pb));
    persistent(); CK(cudaStreamSynchronize(s));
    unsigned long long pr[64][5]; CK(cudaMemcpyFromSymbol(pr, probe, sizeof pr));
    double ph[4] = {};
    for (int st = 10; st < T; ++st) for (int k = 0; k < 4; ++k) ph[k] += (pr[st][k + 1] - pr[st][k]) / 1000.0 / (T - 10);
    printf("block %d, us per step: barrier wait %.2f, issuing h's copies %.2f, product (with the wait for h) and sums %.2f, pointwise and release %.2f (step %.2f)\n",
           pb, ph[0], ph[1], ph[2], ph[3], (pr[T - 1][4] - pr[10][0]) / 1000.0 / (T - 11));
    int off = -1; CK(cudaMemcpyToSymbol(probeBlock, &off, sizeof off));
  }
  CK(cudaGraphLaunch(graph, s)); persistent(); CK(cudaStreamSynchronize(s));
  Bf16Difference d = compareBf16(ysA, ysB, (size_t)T * B * H);
  printf("outputs of %d steps, persistent against per-step: max abs diff %.3e (max |y| %.3e), %zu of %zu values differ\n", T, d.maxAbsDiff,
         d.maxAbs, d.differing, (size_t)T * B * H);
  return 0;
}
