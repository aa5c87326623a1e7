//===- PersistentRecurrence.cu - One kernel for a whole recurrence --------===//
//
// Device library linked into the kernels of eligible scans (bf16 recurrent
// matmul, docs/persistent-recurrences.md): compiled to LLVM bitcode by
// clang and linked by gpu-module-to-binary, so the generated kernel calls
// these functions and LLVM inlines them. The generated kernel owns the time
// loop and the cell's pointwise step; this file owns what is written once:
// the weights held in registers, h_{t-1} staged into shared memory by bulk
// copies multicast to the two blocks of a cluster, the tensor-core product
// and the grid-wide step barrier.
//
// Layout. Block k owns hidden units [16k, 16k + 16) of every gate: the rows
// q·H + 16k + u of U ([G·H, H], bf16, rows are output columns). 384 threads,
// 12 warps: warp (q, p) holds gate q's 16 rows over the K quarter p as
// mma.m16n8k16 A fragments (H / 16 registers a lane, the array the caller
// passes, which becomes registers once inlined). A fourth gate (the LSTM)
// does not fit in registers: its rows stay in shared memory and the three
// warps of a quarter share its product by batch tiles. Each K quarter's
// sums go to a region of its own, batch-major, and gateSum adds the four.
//
// Preconditions (checked by the generated host code before the launch):
// gridDim.x = H / 16 in clusters of 2, 384 threads, the dynamic shared
// memory of rnn::persistent::sharedBytes (include/rnn/DeviceLibrary), a
// batch that is a multiple of 8 up to 32, the step counter zero at launch.
//
//===----------------------------------------------------------------------===//

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include <cuda_bf16.h>

namespace {

using namespace rnn::persistent;
constexpr int kUnits = kUnitsPerBlock;
constexpr int kThreads = kThreadsPerBlock;
constexpr int kCluster = kClusterSize;
static_assert(kMaxBatch == 4 * kBatchTile, "four mbarriers, one per tile");

template <int H> struct Dims {
  static constexpr int kLd = stagedRowBytes(H) / 2; // bf16 elements a row
  static constexpr int kQuarter = H / 4;
  static constexpr int kSteps = kQuarter / 16; // k16 steps a warp
  static constexpr int kHBytes = stagedHBytes(H);
};
template <int G> constexpr int sumsLd() { return sumsRowFloats(G); }
// One mbarrier per n8 tile of batch rows: the product starts on the first.
__shared__ __align__(8) unsigned long long rowsIn[4];
extern __shared__ __align__(16) unsigned char dynamicShared[];

__device__ __forceinline__ unsigned smem32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

template <int H> __device__ __forceinline__ __nv_bfloat16 *stagedH() {
  return reinterpret_cast<__nv_bfloat16 *>(dynamicShared);
}
template <int H> __device__ __forceinline__ __nv_bfloat16 *gateOWeights() {
  return reinterpret_cast<__nv_bfloat16 *>(dynamicShared + Dims<H>::kHBytes);
}
template <int G, int H> __device__ __forceinline__ float *quarterSums() {
  return reinterpret_cast<float *>(dynamicShared + stagedHBytes(H) +
                                   extraGateBytes(G, H));
}

__device__ __forceinline__ void mmaBf16(float (&d)[4], const unsigned *a,
                                        unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void waitPhase(unsigned long long *bar,
                                          unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 "
                 "p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(smem32(bar)), "r"(parity)
                 : "memory");
}

template <int G, int H>
__device__ __forceinline__ void begin(const __nv_bfloat16 *u,
                                      unsigned *fragments) {
  using D = Dims<H>;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4, gate = warp / 4, quarter = warp % 4;
  const int unit0 = blockIdx.x * kUnits;
  if (tid == 0) {
    for (int nt = 0; nt < 4; ++nt)
      asm volatile(
          "mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem32(&rowsIn[nt])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  // Every block's mbarriers exist before any block multicasts into them.
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
  if constexpr (G == 4) {
    __nv_bfloat16 *wo = gateOWeights<H>();
    for (int v = tid; v < kUnits * H / 8; v += kThreads) {
      int row = v / (H / 8), col = 8 * (v % (H / 8));
      *reinterpret_cast<uint4 *>(wo + row * D::kLd + col) =
          *reinterpret_cast<const uint4 *>(
              u + (size_t)(3 * H + unit0 + row) * H + col);
    }
  }
  // Lane (g, t)'s A fragments: a0 (row g, k 2t), a1 (row g + 8), a2 (row g,
  // k 2t + 8), a3 (row g + 8, k 2t + 8) of each k16 step.
  const unsigned *lo = reinterpret_cast<const unsigned *>(
      u + (size_t)(gate * H + unit0 + g) * H + D::kQuarter * quarter);
  const unsigned *hi = lo + 8 * H / 2;
#pragma unroll
  for (int kk = 0; kk < D::kSteps; ++kk) {
    fragments[4 * kk] = lo[8 * kk + t];
    fragments[4 * kk + 1] = hi[8 * kk + t];
    fragments[4 * kk + 2] = lo[8 * kk + t + 4];
    fragments[4 * kk + 3] = hi[8 * kk + t + 4];
  }
  __syncthreads();
}

template <int G, int H>
__device__ __forceinline__ void
product(int step, int batch, const __nv_bfloat16 *hPrev,
        const unsigned *counter, const unsigned *fragments) {
  using D = Dims<H>;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4, gate = warp / 4, quarter = warp % 4;
  const int tiles = batch / 8;
  __nv_bfloat16 *hs = stagedH<H>();
  if (tid == 0) {
    if (step > 0) {
      // Every block has written h_{t-1}: the counter counts blocks done
      // with each step (zero at launch).
      unsigned target = gridDim.x * step, now;
      do
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                     : "=r"(now)
                     : "l"(counter)
                     : "memory");
      while ((int)(now - target) < 0);
      // The bulk copies below read through the async proxy what the other
      // blocks wrote through the generic one.
      asm volatile("fence.proxy.async.global;" ::: "memory");
    }
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    for (int nt = 0; nt < tiles; ++nt) {
      asm volatile(
          "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
              smem32(&rowsIn[nt])),
          "r"(8 * H * 2)
          : "memory");
      // This block's half of the tile's rows, to both blocks of the cluster.
      for (int row = 8 * nt + (int)rank; row < 8 * nt + 8; row += kCluster)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::"
                     "complete_tx::bytes.multicast::cluster [%0], [%1], %2, "
                     "[%3], %4;" ::"r"(smem32(hs + row * D::kLd)),
                     "l"(hPrev + (size_t)row * H), "r"(H * 2),
                     "r"(smem32(&rowsIn[nt])),
                     "h"((unsigned short)((1 << kCluster) - 1))
                     : "memory");
    }
  }
  constexpr int kSumsLd = sumsLd<G>();
  float *mine = quarterSums<G, H>() + quarter * kMaxBatch * kSumsLd;
  const __nv_bfloat16 *bBase =
      hs + (lane % 8) * D::kLd + D::kQuarter * quarter + 8 * ((lane / 8) % 2);
  // Gate o (G = 4): warp 0 of a quarter takes tiles 0 and 1, warps 1 and 2
  // take tiles 2 and 3.
  auto ownsO = [&](int nt) { return gate == 0 ? nt < 2 : nt == gate + 1; };
  const __nv_bfloat16 *aO = gateOWeights<H>() +
                            (lane % 8 + 8 * ((lane / 8) % 2)) * D::kLd +
                            8 * (lane / 16) + D::kQuarter * quarter;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    if (nt >= tiles)
      break;
    waitPhase(&rowsIn[nt], step & 1);
    const __nv_bfloat16 *bTile = bBase + nt * 8 * D::kLd;
    const int b = nt * 8 + 2 * t;
    float acc[4] = {};
#pragma unroll
    for (int kk = 0; kk < D::kSteps; ++kk) {
      unsigned b0, b1;
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                   : "=r"(b0), "=r"(b1)
                   : "r"(smem32(bTile + 16 * kk)));
      mmaBf16(acc, fragments + 4 * kk, b0, b1);
    }
    // acc: rows (g, g + 8) of the warp's gate, batch rows b, b + 1.
    const int row = gate * kUnits + g;
    mine[b * kSumsLd + row] = acc[0];
    mine[(b + 1) * kSumsLd + row] = acc[1];
    mine[b * kSumsLd + row + 8] = acc[2];
    mine[(b + 1) * kSumsLd + row + 8] = acc[3];
    if constexpr (G == 4) {
      if (ownsO(nt)) {
        float accO[4] = {};
#pragma unroll
        for (int kk = 0; kk < D::kSteps; ++kk) {
          unsigned a[4], b0, b1;
          asm volatile(
              "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
              : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
              : "r"(smem32(aO + 16 * kk)));
          asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                       : "=r"(b0), "=r"(b1)
                       : "r"(smem32(bTile + 16 * kk)));
          mmaBf16(accO, a, b0, b1);
        }
        mine[b * kSumsLd + 48 + g] = accO[0];
        mine[(b + 1) * kSumsLd + 48 + g] = accO[1];
        mine[b * kSumsLd + 56 + g] = accO[2];
        mine[(b + 1) * kSumsLd + 56 + g] = accO[3];
      }
    }
  }
  __syncthreads();
}

template <int G, int H>
__device__ __forceinline__ float gateSum(int gate, int b, int unit) {
  constexpr int kSumsLd = sumsLd<G>(), kStride = kMaxBatch * kSumsLd;
  const float *q = quarterSums<G, H>() + b * kSumsLd + gate * kUnits + unit;
  return q[0] + q[kStride] + q[2 * kStride] + q[3 * kStride];
}

__device__ __forceinline__ void release(unsigned *counter) {
  // The block's h_t is written (the barrier orders the other threads'
  // stores before thread 0's release).
  __syncthreads();
  if (threadIdx.x == 0)
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter)
                 : "memory");
}

} // namespace

// Brings the line at `address` (global memory) into L1: the generated kernel
// asks for what a step's pointwise phase will read, before the barrier.
extern "C" __device__ __attribute__((always_inline)) void
rnn_persistent_prefetch_l1(const void *address) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(address));
}

// The entry points the generated kernels call, one set per (gates, H).
// Inlined always: the weight fragments stay in registers only if every call
// that touches them is inlined into the kernel.
#define RNN_PERSISTENT_ENTRY_POINTS(G, H)                                      \
  extern "C" __device__ __attribute__((always_inline)) void                    \
  rnn_persistent_g##G##_h##H##_begin(const __nv_bfloat16 *u,                   \
                                     unsigned *fragments) {                    \
    begin<G, H>(u, fragments);                                                 \
  }                                                                            \
  extern "C" __device__ __attribute__((always_inline)) void                    \
  rnn_persistent_g##G##_h##H##_product(                                        \
      int step, int batch, const __nv_bfloat16 *hPrev,                         \
      const unsigned *counter, const unsigned *fragments) {                    \
    product<G, H>(step, batch, hPrev, counter, fragments);                     \
  }                                                                            \
  extern "C" __device__ __attribute__((always_inline)) float                   \
  rnn_persistent_g##G##_h##H##_sum(int gate, int b, int unit) {                \
    return gateSum<G, H>(gate, b, unit);                                       \
  }                                                                            \
  extern "C" __device__ __attribute__((always_inline)) void                    \
  rnn_persistent_g##G##_h##H##_release(unsigned *counter) {                    \
    release(counter);                                                          \
  }

RNN_PERSISTENT_ENTRY_POINTS(3, 2048)
RNN_PERSISTENT_ENTRY_POINTS(4, 2048)
