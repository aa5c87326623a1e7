// Experiment: the bf16 GRU recurrence at `wide` (B = 32, H = 2048, T = 50)
// as one persistent kernel that keeps its weights on chip for the whole
// sequence, against the per-step path the compiler builds (a cuBLAS GEMM and
// a fused pointwise kernel per step, in a CUDA graph, the kernel launched
// early).
//
// Per step the per-step path streams all of U (6144 x 2048 bf16, 24 MiB)
// from L2 into the GEMM. Here 128 blocks (one per SM, all resident at once)
// each own 16 hidden units and their 48 rows of U (r, z, n; 192 KiB); a step
// is a grid-wide barrier (h_{t-1} complete: a counter every block adds to),
// h_{t-1} (32 x 2048 bf16, 128 KiB) staged in shared memory, the product
// with mma.sync m16n8k16 (bf16, f32 sums), and the GRU's pointwise step for
// the block's 16 units, whose h_t (bf16) it writes for the next step.
// Variants:
//  weights in shared memory  h streamed through two 16 KiB buffers (cp.async);
//  weights in registers      warp (q, p) of 12 holds gate q's 16 rows over the
//                            K quarter p as mma A fragments (128 registers a
//                            lane); all of h staged at once; the projection
//                            for the step fetched before the barrier;
//  h multicast               the same, h staged with bulk copies multicast to
//                            both blocks of a cluster of 2 (each issues 16
//                            rows), completing on an mbarrier (clusters of 4:
//                            only 30 of the 32 fit at once);
//  by quarters               one mbarrier per K quarter (1 KiB copies), each
//                            warp starting on its own quarter;
//  flags                     the grid barrier as one flag per block;
//  lean release              h multicast, b_hn read once into shared memory,
//                            the quarters' sums stored batch-major (the
//                            pointwise step reads them without bank
//                            conflicts), and the step released by one
//                            red.release.gpu instead of a fence and an atomic;
//  by row tiles              lean, with one mbarrier per 8 batch rows of h and
//                            the product tile by tile as they arrive.
// Phases of one step (globaltimer, blocks 0 and 77, steps 10-49): waiting at
// the barrier, staging h, the product and the quarters' sums, the pointwise
// step and the release. Outputs of all 50 steps against the per-step path's.
// GRU as torch.nn.GRU: r = σ(x_r + U_r h + b_hr), z = σ(x_z + U_z h + b_hz),
// n = tanh(x_n + r (U_n h + b_hn)), h' = (1 - z) n + z h; x = W x_t + b_W
// precomputed (f32, [T, B, 3H]), b_hr and b_hz folded into it.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/persistent_bf16_gru.cu -lcublas -o build/exp/persistent_bf16_gru
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <functional>
#include <vector>
#include "../../lib/Runtime/Cuda/PreloadedPartialsGemm.cu"
#include "step_harness.cuh"
#include "persistent_step.cuh"

constexpr int B = 32, H = 2048, G = 3 * H, T = 50;
constexpr int kBlocks = H / 16, kThreads = 384;          // 12 warps
constexpr int kMulticast = 2;                           // blocks per cluster sharing h's staging (4: only 30 of 32 clusters fit)
constexpr int kChunk = 256;                              // K columns of h per stage
constexpr int kWeightLd = H + 8, kHLd = kChunk + 8;      // padded rows (bf16): ldmatrix rows hit distinct banks
constexpr size_t kWeightBytes = 48 * kWeightLd * 2, kStageBytes = B * kHLd * 2;
constexpr size_t kSmem = kWeightBytes + 2 * kStageBytes;


// One step of h_{t-1} -> h_t for the block's 16 units; `counter` counts
// blocks done with each step (never reset: the targets count on).
__global__ void __launch_bounds__(kThreads, 1)
persistentGru(const __nv_bfloat16 *u, const float *x, const float *bhn, __nv_bfloat16 *hbuf /* [2][B][H] */,
              __nv_bfloat16 *ys, unsigned *counter, unsigned base, int steps) {
  extern __shared__ float4 smem4[];
  auto *w = reinterpret_cast<__nv_bfloat16 *>(smem4);                           // [48][kWeightLd]
  auto *stage = reinterpret_cast<__nv_bfloat16 *>(reinterpret_cast<char *>(smem4) + kWeightBytes);  // [2][B][kHLd]
  float *gates = reinterpret_cast<float *>(stage);                              // [48][B] after the product
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int unit0 = blockIdx.x * 16;
  // The block's rows of U, once: gate q's rows q*H + unit0 .. + 15.
  for (int v = tid; v < 48 * H / 8; v += kThreads) {
    int row = v / (H / 8), col = 8 * (v % (H / 8));
    copy16(w + row * kWeightLd + col, u + (size_t)((row / 16) * H + unit0 + row % 16) * H + col);
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  const int gate = warp / 4, nTile = warp % 4;  // warp's m16 tile (gate) and n8 tile (batch rows)
  // ldmatrix addresses: A rows (lane % 8) + 8 ((lane / 8) % 2), k + 8 (lane / 16); B rows lane % 8, k + 8 ((lane / 8) % 2).
  const __nv_bfloat16 *aRow = w + (gate * 16 + lane % 8 + 8 * ((lane / 8) % 2)) * kWeightLd + 8 * (lane / 16);
  const int bOffset = (nTile * 8 + lane % 8) * kHLd + 8 * ((lane / 8) % 2);
  for (int step = 0; step < steps; ++step) {
    const __nv_bfloat16 *hPrev = hbuf + (size_t)(step % 2) * B * H;
    __nv_bfloat16 *hNext = hbuf + (size_t)((step + 1) % 2) * B * H;
    // Wait until every block has written h_{t-1} (step 0: the caller's h0).
    if (step > 0) {
      if (tid == 0) {
        unsigned target = base + kBlocks * step, now;
        do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(counter)); } while ((int)(now - target) < 0);
      }
      __syncthreads();
    }
    auto stageChunk = [&](int c) {
      __nv_bfloat16 *dst = stage + (c % 2) * B * kHLd;
      for (int v = tid; v < B * kChunk / 8; v += kThreads) {
        int row = v / (kChunk / 8), col = 8 * (v % (kChunk / 8));
        copy16(dst + row * kHLd + col, hPrev + (size_t)row * H + c * kChunk + col);
      }
      asm volatile("cp.async.commit_group;" ::: "memory");
    };
    float acc[4] = {0, 0, 0, 0};
    stageChunk(0);
    for (int c = 0; c < H / kChunk; ++c) {
      if (c + 1 < H / kChunk) { stageChunk(c + 1); asm volatile("cp.async.wait_group 1;" ::: "memory"); }
      else asm volatile("cp.async.wait_group 0;" ::: "memory");
      __syncthreads();
      const __nv_bfloat16 *bTile = stage + (c % 2) * B * kHLd + bOffset;
#pragma unroll
      for (int k = 0; k < kChunk; k += 16) {
        unsigned a0, a1, a2, a3, b0, b1;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(smem32(aRow + c * kChunk + k)));
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(smem32(bTile + k)));
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      }
      __syncthreads();  // The buffer is refilled two chunks on.
    }
    // acc: rows (gate*16 + g, + 8) x batch (nTile*8 + 2t, + 1).
    gates[(gate * 16 + g) * B + nTile * 8 + 2 * t] = acc[0];
    gates[(gate * 16 + g) * B + nTile * 8 + 2 * t + 1] = acc[1];
    gates[(gate * 16 + g + 8) * B + nTile * 8 + 2 * t] = acc[2];
    gates[(gate * 16 + g + 8) * B + nTile * 8 + 2 * t + 1] = acc[3];
    __syncthreads();
    const float *xt = x + (size_t)step * B * G;
    for (int p = tid; p < 16 * B; p += kThreads) {
      int unit = p % 16, b = p / 16, j = unit0 + unit;
      float r = sig(xt[b * G + j] + gates[unit * B + b]);
      float z = sig(xt[b * G + H + j] + gates[(16 + unit) * B + b]);
      float n = tanhf(xt[b * G + 2 * H + j] + r * (gates[(32 + unit) * B + b] + bhn[j]));
      float h = __bfloat162float(hPrev[(size_t)b * H + j]);
      __nv_bfloat16 out = __float2bfloat16((1 - z) * n + z * h);
      hNext[(size_t)b * H + j] = out;
      ys[(size_t)step * B * H + (size_t)b * H + j] = out;
    }
    __syncthreads();  // gates[] is the staging buffer again; h_t written.
    if (tid == 0) { __threadfence(); atomicAdd(counter, 1u); }
  }
}

// Variant: the weights in registers (warp (q, p) of 12 holds gate q's 16 rows
// over K = 512p .. 512p + 511 as mma A fragments: 128 registers a lane), so
// that shared memory can take all of h_{t-1} at once (every load in flight
// together) and the four K quarters' sums meet in shared memory.
constexpr int kFullLd = H + 8;
constexpr int kSumsLd = 49;  // kLean: the quarters' sums batch-major, rows padded (the pointwise reads them unit by unit)
constexpr size_t kRegSmem = (size_t)B * kFullLd * 2 + 4 * B * kSumsLd * 4 + 48 * B * 4;
// Block `probeBlock`'s thread 0 writes the time of each phase boundary of each
// step to probe[step][5] (barrier start, barrier passed, h staged, product done, step done).
__device__ unsigned long long probe[64][5];
__device__ int probeBlock = -1;
// kCluster > 1: h_{t-1} staged with bulk copies multicast to the kCluster blocks
// of a cluster (each issues 32 / kCluster rows), completing on an mbarrier.
// kQuarters: one mbarrier per K quarter, so that each warp starts on its
// quarter of h as soon as that quarter is in. kFlags: the grid barrier as one
// flag per block (a release store; waiters poll all 128 flags) instead of one
// counter that every block adds to.
// kLean: b_hn read once into shared memory, and the release a single
// red.release.gpu instead of a fence and an atomic add.
// kRowTiles: one mbarrier per n8 tile of batch rows (8 rows of h), the product
// tile by tile, so that it starts once the first 8 rows are in.
template <int kCluster, bool kQuarters = false, bool kFlags = false, bool kLean = false, bool kRowTiles = false>
__global__ void __launch_bounds__(kThreads, 1)
persistentGruRegs(const __nv_bfloat16 *u, const float *x, const float *bhn, __nv_bfloat16 *hbuf,
                  __nv_bfloat16 *ys, unsigned *counter, unsigned base, int steps) {
  const bool probing = blockIdx.x == probeBlock && threadIdx.x == 0;
  extern __shared__ float4 smem4[];
  auto *hs = reinterpret_cast<__nv_bfloat16 *>(smem4);                                   // [B][kFullLd]
  float *sums = reinterpret_cast<float *>(reinterpret_cast<char *>(smem4) + (size_t)B * kFullLd * 2);  // [4][48][B]
  float *xs = sums + 4 * B * kSumsLd;  // [B][48]: the step's projection for the block's columns, prefetched
  // Where (row, batch) of a quarter's sums lives, and the quarters' stride.
  auto sumAt = [](int row, int b) { return kLean ? b * kSumsLd + row : row * B + b; };
  constexpr int kQuarterStride = kLean ? B * kSumsLd : 48 * B;
  __shared__ __align__(8) unsigned long long stagedQ[4];  // mbarriers of the multicast staging (one, or one per quarter)
  unsigned long long &staged = stagedQ[0];
  __shared__ float bhnBlock[16];
  if (threadIdx.x < 16) bhnBlock[threadIdx.x] = bhn[blockIdx.x * 16 + threadIdx.x];  // Read after the first step's barriers.
  unsigned *flags = counter + 1;  // kFlags: [kBlocks] after the counter
  unsigned rank = 0;
  if constexpr (kCluster > 1) {
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) {
      for (int q = 0; q < 4; ++q) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem32(&stagedQ[q])));
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // Every block's mbarrier is initialised before any block multicasts into it.
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
  }
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int unit0 = blockIdx.x * 16, gate = warp / 4, quarter = warp % 4;
  // A fragments straight from global memory.
  unsigned wr[32][4];
  loadFragmentsBf16(wr, u + (size_t)(gate * H + unit0 + g) * H + 512 * quarter, u + (size_t)(gate * H + unit0 + g + 8) * H + 512 * quarter, t);
  for (int step = 0; step < steps; ++step) {
    const __nv_bfloat16 *hPrev = hbuf + (size_t)(step % 2) * B * H;
    __nv_bfloat16 *hNext = hbuf + (size_t)((step + 1) % 2) * B * H;
    if (probing) probe[step][0] = nowNs();
    // The step's projection does not depend on h: fetch it before the barrier.
    for (int v = tid; v < B * 12; v += kThreads) {
      int b = v / 12, q = (v % 12) / 4, part = v % 4;
      copy16(xs + b * 48 + q * 16 + 4 * part, x + (size_t)step * B * G + (size_t)b * G + q * H + unit0 + 4 * part);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
    if (step > 0) {
      if constexpr (kFlags) {
        if (tid < kBlocks) {
          unsigned target = base / kBlocks + step, now;
          do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(flags + tid)); } while ((int)(now - target) < 0);
        }
      } else if (tid == 0) {
        unsigned target = base + kBlocks * step, now;
        do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(counter)); } while ((int)(now - target) < 0);
      }
      __syncthreads();
    }
    if (probing) probe[step][1] = nowNs();
    if constexpr (kCluster > 1 && kRowTiles) {
      // Batch rows by n8 tiles, each tile on its own mbarrier (waited for in the product).
      if (tid == 0) {
        for (int nt = 0; nt < 4; ++nt) {
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem32(&stagedQ[nt])), "r"(8 * H * 2) : "memory");
          for (int row = 8 * nt + (int)rank; row < 8 * nt + 8; row += kCluster)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
                         ::"r"(smem32(hs + row * kFullLd)), "l"(hPrev + (size_t)row * H), "r"(H * 2), "r"(smem32(&stagedQ[nt])),
                         "h"((unsigned short)((1 << kCluster) - 1)) : "memory");
        }
      }
    } else if constexpr (kCluster > 1 && kQuarters) {
      // Quarter by quarter, each on its own mbarrier; a warp waits for its own.
      if (tid == 0) {
        for (int q = 0; q < 4; ++q) {
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem32(&stagedQ[q])), "r"(B * 512 * 2) : "memory");
          for (int row = rank; row < B; row += kCluster)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
                         ::"r"(smem32(hs + row * kFullLd + 512 * q)), "l"(hPrev + (size_t)row * H + 512 * q), "r"(512 * 2),
                         "r"(smem32(&stagedQ[q])), "h"((unsigned short)((1 << kCluster) - 1)) : "memory");
        }
      }
      unsigned done = 0;
      while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem32(&stagedQ[quarter])), "r"(step & 1) : "memory");
    } else if constexpr (kCluster > 1) {
      // This block's share of h_{t-1}'s rows, to every block of the cluster.
      if (tid == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem32(&staged)), "r"(B * H * 2) : "memory");
        for (int row = rank; row < B; row += kCluster)
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
                       ::"r"(smem32(hs + row * kFullLd)), "l"(hPrev + (size_t)row * H), "r"(H * 2), "r"(smem32(&staged)),
                       "h"((unsigned short)((1 << kCluster) - 1)) : "memory");
      }
      asm volatile("cp.async.wait_group 0;" ::: "memory");  // The projection prefetch.
      unsigned done = 0;
      while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem32(&staged)), "r"(step & 1) : "memory");
      __syncthreads();
    } else {
    // All of h_{t-1}, in four groups (one per K quarter).
    for (int q = 0; q < 4; ++q) {
      for (int v = tid; v < B * 64; v += kThreads) {
        int row = v / 64, col = 512 * q + 8 * (v % 64);
        copy16(hs + row * kFullLd + col, hPrev + (size_t)row * H + col);
      }
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    }
    if (probing) probe[step][2] = nowNs();
    float acc[4][4] = {};
    const __nv_bfloat16 *bBase = hs + (lane % 8) * kFullLd + 512 * quarter + 8 * ((lane / 8) % 2);
    if constexpr (kRowTiles) {
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        unsigned done = 0;
        while (!done)
          asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                       : "=r"(done) : "r"(smem32(&stagedQ[nt])), "r"(step & 1) : "memory");
#pragma unroll
        for (int kk = 0; kk < 32; ++kk) {
          unsigned b0, b1;
          asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(smem32(bBase + nt * 8 * kFullLd + 16 * kk)));
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                       : "+f"(acc[nt][0]), "+f"(acc[nt][1]), "+f"(acc[nt][2]), "+f"(acc[nt][3])
                       : "r"(wr[kk][0]), "r"(wr[kk][1]), "r"(wr[kk][2]), "r"(wr[kk][3]), "r"(b0), "r"(b1));
        }
      }
      asm volatile("cp.async.wait_group 0;" ::: "memory");  // The projection prefetch.
    } else
#pragma unroll
    for (int kk = 0; kk < 32; ++kk)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        unsigned b0, b1;
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(smem32(bBase + nt * 8 * kFullLd + 16 * kk)));
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(acc[nt][0]), "+f"(acc[nt][1]), "+f"(acc[nt][2]), "+f"(acc[nt][3])
                     : "r"(wr[kk][0]), "r"(wr[kk][1]), "r"(wr[kk][2]), "r"(wr[kk][3]), "r"(b0), "r"(b1));
      }
    if constexpr (kCluster > 1 && kQuarters) {
      asm volatile("cp.async.wait_group 0;" ::: "memory");  // The projection prefetch.
      // Every quarter is in (each was waited for by its warps before the barrier below) before the pointwise reads h.
    }
    float *mine = sums + quarter * kQuarterStride;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      mine[sumAt(gate * 16 + g, nt * 8 + 2 * t)] = acc[nt][0];
      mine[sumAt(gate * 16 + g, nt * 8 + 2 * t + 1)] = acc[nt][1];
      mine[sumAt(gate * 16 + g + 8, nt * 8 + 2 * t)] = acc[nt][2];
      mine[sumAt(gate * 16 + g + 8, nt * 8 + 2 * t + 1)] = acc[nt][3];
    }
    __syncthreads();
    if (probing) probe[step][3] = nowNs();
    auto gateSum = [&](int row, int b) { int i = sumAt(row, b); return sums[i] + sums[kQuarterStride + i] + sums[2 * kQuarterStride + i] + sums[3 * kQuarterStride + i]; };
    for (int p = tid; p < 16 * B; p += kThreads) {
      int unit = p % 16, b = p / 16, j = unit0 + unit;
      float r = sig(xs[b * 48 + unit] + gateSum(unit, b));
      float z = sig(xs[b * 48 + 16 + unit] + gateSum(16 + unit, b));
      float n = tanhf(xs[b * 48 + 32 + unit] + r * (gateSum(32 + unit, b) + (kLean ? bhnBlock[unit] : bhn[j])));
      float h = __bfloat162float(hs[b * kFullLd + j]);
      __nv_bfloat16 out = __float2bfloat16((1 - z) * n + z * h);
      hNext[(size_t)b * H + j] = out;
      ys[(size_t)step * B * H + (size_t)b * H + j] = out;
    }
    __syncthreads();
    if constexpr (kFlags) {
      if (tid == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flags + blockIdx.x), "r"(base / kBlocks + step + 1) : "memory");
    } else if (kLean) {
      if (tid == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
    } else if (tid == 0) { __threadfence(); atomicAdd(counter, 1u); }
    if (probing) probe[step][4] = nowNs();
  }
  // The counter's base counts every launch's steps, flags or not.
  if constexpr (kFlags) if (tid == 0) atomicAdd(counter, (unsigned)steps);
}

int main() {
  CublasStream cs = cublasOnNewStream();
  cublasHandle_t hd = cs.handle; cudaStream_t s = cs.stream;
  float *uf, *x, *bhn, *h0f, *gh;
  __nv_bfloat16 *u, *h0, *hA, *hB, *ysA, *ysB;
  unsigned *counter;
  CK(cudaMalloc(&uf, 4 * (size_t)G * H)); CK(cudaMalloc(&u, 2 * (size_t)G * H));
  CK(cudaMalloc(&x, 4 * (size_t)T * B * G)); CK(cudaMalloc(&bhn, 4 * H)); CK(cudaMalloc(&gh, 4 * (size_t)B * G));
  CK(cudaMalloc(&h0f, 4 * B * H)); CK(cudaMalloc(&h0, 2 * B * H));
  CK(cudaMalloc(&hA, 2 * 2 * B * H)); CK(cudaMalloc(&hB, 2 * 2 * B * H));
  CK(cudaMalloc(&ysA, 2 * (size_t)T * B * H)); CK(cudaMalloc(&ysB, 2 * (size_t)T * B * H));
  CK(cudaMalloc(&counter, 4 * (1 + kBlocks))); CK(cudaMemset(counter, 0, 4 * (1 + kBlocks)));
  fill<<<G * H / 256, 256>>>(uf, (size_t)G * H, 0.06f, 1); toBf16<<<G * H / 256, 256>>>(uf, u, (size_t)G * H);
  fill<<<T * B * G / 256, 256>>>(x, (size_t)T * B * G, 2.f, 2); fill<<<H / 256, 256>>>(bhn, H, 0.5f, 4);
  fill<<<B * H / 256, 256>>>(h0f, B * H, 1.f, 3); toBf16<<<B * H / 256, 256>>>(h0f, h0, B * H);
  CK(cudaDeviceSynchronize());
  CK(cudaFuncSetAttribute(persistentGru, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kSmem));
  CK(cudaFuncSetAttribute(persistentGruRegs<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kRegSmem));
  CK(cudaFuncSetAttribute(persistentGruRegs<kMulticast>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kRegSmem));
  CK(cudaFuncSetAttribute(persistentGruRegs<kMulticast>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(persistentGruRegs<kMulticast, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kRegSmem));
  CK(cudaFuncSetAttribute(persistentGruRegs<kMulticast, true, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kRegSmem));
  CK(cudaFuncSetAttribute(persistentGruRegs<kMulticast, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kRegSmem));
  CK(cudaFuncSetAttribute(persistentGruRegs<kMulticast, false, false, true, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kRegSmem));
  {
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = kBlocks; cfg.blockDim = kThreads; cfg.dynamicSmemBytes = kRegSmem;
    cudaLaunchAttribute at; at.id = cudaLaunchAttributeClusterDimension; at.val.clusterDim.x = kMulticast; at.val.clusterDim.y = 1; at.val.clusterDim.z = 1;
    cfg.attrs = &at; cfg.numAttrs = 1; int clusters = 0;
    CK(cudaOccupancyMaxActiveClusters(&clusters, persistentGruRegs<kMulticast>, &cfg));
    printf("clusters of %d resident at once: %d (the grid has %d)\n", kMulticast, clusters, kBlocks / kMulticast);
    if (clusters < kBlocks / kMulticast) { printf("does not fit\n"); return 1; }
  }
  int perSm = 0, sms = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, persistentGru, kThreads, kSmem));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  printf("persistent kernel: %d blocks of %d threads, %zu bytes of shared memory, %d per SM, %d SMs\n", kBlocks, kThreads, kSmem, perSm, sms);
  if (perSm * sms < kBlocks) { printf("does not fit\n"); return 1; }
  // Per-step path: h ping-pongs between the two halves of hA.
  auto perStep = [&] {
    CK(cudaMemcpyAsync(hA, h0, 2 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int step = 0; step < T; ++step) {
      const __nv_bfloat16 *hp = hA + (size_t)(step % 2) * B * H;
      __nv_bfloat16 *hn = hA + (size_t)((step + 1) % 2) * B * H;
      recurrentGemmBf16(hd, u, hp, B, G, H, gh);
      launchEarly(s, dim3(B * H / 256), dim3(256), 0, gruBf16Step<B, H>, (const float *)gh, 1, (const float *)(x + (size_t)step * B * G),
                  (const float *)bhn, hp, hn, ysA + (size_t)step * B * H);
    } };
  unsigned launches = 0;  // Persistent calls so far: the counter's base.
  bool inRegisters = false; int cluster = 1, pipelining = 0;  // 1: quarters, 2: quarters and flags, 3: lean release, 4: lean, by row tiles
  auto persistent = [&] {
    CK(cudaMemcpyAsync(hB, h0, 2 * B * H, cudaMemcpyDeviceToDevice, s));
    unsigned base = launches * kBlocks * T;
    int steps = T;
    const __nv_bfloat16 *uu = u; const float *xx = x, *bb = bhn; __nv_bfloat16 *hh = hB, *yy = ysB; unsigned *cc = counter;
    void *args[] = {&uu, &xx, &bb, &hh, &yy, &cc, &base, &steps};
    if (inRegisters && cluster > 1) {
      // All 128 blocks are resident at once (checked above), as the grid barrier needs.
      cudaLaunchConfig_t cfg = {}; cfg.gridDim = kBlocks; cfg.blockDim = kThreads; cfg.dynamicSmemBytes = kRegSmem; cfg.stream = s;
      cudaLaunchAttribute at; at.id = cudaLaunchAttributeClusterDimension; at.val.clusterDim.x = kMulticast; at.val.clusterDim.y = 1; at.val.clusterDim.z = 1;
      cfg.attrs = &at; cfg.numAttrs = 1;
      const void *kernel = pipelining == 4 ? (const void *)persistentGruRegs<kMulticast, false, false, true, true> : pipelining == 3 ? (const void *)persistentGruRegs<kMulticast, false, false, true> : pipelining == 2 ? (const void *)persistentGruRegs<kMulticast, true, true>
                         : pipelining == 1 ? (const void *)persistentGruRegs<kMulticast, true> : (const void *)persistentGruRegs<kMulticast>;
      CK(cudaLaunchKernelExC(&cfg, kernel, args));
    } else if (inRegisters) CK(cudaLaunchCooperativeKernel((void *)persistentGruRegs<1>, kBlocks, kThreads, args, kRegSmem, s));
    else CK(cudaLaunchCooperativeKernel((void *)persistentGru, kBlocks, kThreads, args, kSmem, s));
    ++launches; };
  cudaGraphExec_t graph = captureGraph(s, perStep);
  // Each persistent call timed with events around it (one launch; no graph).
  auto timePersistent = [&] { return usPerStepOf(s, persistent, T); };
  for (int round = 0; round < 3; ++round) {
    float a = usPerStep(graph, s, T);
    inRegisters = false; float b = timePersistent();
    inRegisters = true; float c = timePersistent();
    cluster = kMulticast; float d = timePersistent();
    pipelining = 1; float e = timePersistent(); pipelining = 2; float f = timePersistent();
    pipelining = 3; float l = timePersistent(); pipelining = 4; float rt = timePersistent(); pipelining = 0; cluster = 1;
    printf("round %d, us per step: per-step path (cuBLAS GEMM + kernel, graph) %.2f; persistent: weights in shared memory %.2f, in registers %.2f, "
           "and h multicast in clusters of %d %.2f, and by quarters %.2f, and flags %.2f; multicast with the lean release %.2f, and by row tiles %.2f\n", round, a, b, c, kMulticast, d, e, f, l, rt);
  }
  // Where a step of the register variant goes: phases of block 0 and block 77, steps 10..49.
  for (int run = 0; run < 12; ++run) {
    int pb = run % 2 ? 77 : 0; cluster = run < 2 ? 1 : kMulticast; pipelining = run < 4 ? 0 : run < 6 ? 1 : run < 8 ? 2 : run < 10 ? 3 : 4;
    CK(cudaMemcpyToSymbol(probeBlock, &pb, sizeof pb));
    inRegisters = true; persistent(); CK(cudaStreamSynchronize(s));
    unsigned long long pr[64][5]; CK(cudaMemcpyFromSymbol(pr, probe, sizeof pr));
    double ph[4] = {};
    for (int st = 10; st < T; ++st) for (int k = 0; k < 4; ++k) ph[k] += (pr[st][k + 1] - pr[st][k]) / 1000.0 / (T - 10);
    printf("clusters of %d, pipelining %d, block %d, us per step: barrier wait %.2f, staging h %.2f, product and sums %.2f, pointwise and release %.2f (step %.2f)\n", cluster, pipelining, pb, ph[0], ph[1], ph[2], ph[3],
           (pr[T - 1][4] - pr[10][0]) / 1000.0 / (T - 11));
    int off = -1; CK(cudaMemcpyToSymbol(probeBlock, &off, sizeof off));
  }
  cluster = 1; pipelining = 0;
  for (int variant = 0; variant < 7; ++variant) {
  inRegisters = variant >= 1; cluster = variant >= 2 ? kMulticast : 1; pipelining = variant >= 3 ? variant - 2 : 0;
  CK(cudaGraphLaunch(graph, s)); persistent(); CK(cudaStreamSynchronize(s));
  // Outputs of all T steps, bf16, against the per-step path's.
  Bf16Difference diff = compareBf16(ysA, ysB, (size_t)T * B * H);
  printf("outputs of %d steps, persistent (weights in %s) against per-step: max abs diff %.3e (max |y| %.3e), %zu of %zu values differ\n", T,
         !inRegisters ? "shared memory" : cluster == 1 ? "registers" : pipelining == 0 ? "registers, h multicast" : pipelining == 1 ? "registers, h multicast by quarters" : pipelining == 2 ? "registers, h multicast by quarters, flags" : pipelining == 3 ? "registers, h multicast, lean release" : "registers, h multicast by row tiles, lean release", diff.maxAbsDiff, diff.maxAbs, diff.differing, (size_t)T * B * H);
  }
  return 0;
}
