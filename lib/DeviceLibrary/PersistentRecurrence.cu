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
// Layout (include/rnn/DeviceLibrary/PersistentRecurrence.h). Block k owns
// hidden units [nk, nk + n) of every gate (n = 16): the rows q·H + nk + u of
// U ([G·H, H], bf16, rows are output columns), gate-major, in 16-row tiles
// (rows past the last gate, if a layout had them, are zero). Warp (tile, p)
// holds its tile's rows over the K quarter p as mma.m16n8k16 A fragments
// (H / 16 registers a lane, the array the caller passes, which becomes
// registers once inlined). The LSTM's fourth tile does not fit in
// registers: its rows stay in shared memory and the three warps of a
// quarter share its product by batch tiles. Each K quarter's sums go to a
// region of their own, batch-major, and gateSum adds the four.
//
// Preconditions (checked by the generated host code before the launch):
// blocks(H) blocks in clusters of 2, threadsPerBlock(G, H) threads, the
// dynamic shared memory of sharedBytes(G, H), a batch that is a multiple of
// 8 up to the layout's maxBatch, the step counter zero at launch.
//
//===----------------------------------------------------------------------===//

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include <cuda_bf16.h>

namespace {

using namespace rnn::persistent;
constexpr int kCluster = kClusterSize;

template <int G, int H> struct Shape {
  static constexpr int kUnits = layoutFor(H).unitsPerBlock;
  static constexpr int kMaxTiles = layoutFor(H).maxBatch / kBatchTile;
  static constexpr int kThreads = threadsPerBlock(G, H);
  static constexpr int kLd = stagedRowBytes(H) / 2; // bf16 elements a row
  static constexpr int kQuarter = H / 4;
  static constexpr int kSteps = kQuarter / 16; // k16 steps a warp
  static constexpr int kSumsLd = sumsRowFloats(G, H);
  static constexpr int kSumsStride = layoutFor(H).maxBatch * kSumsLd;
  // The LSTM: its fourth gate's tile in shared memory.
  static constexpr bool kSharedTile = extraTileBytes(G, H) > 0;
};

// One mbarrier per n8 tile of batch rows: the product starts on the first.
__shared__ __align__(8) unsigned long long rowsIn[kMaxBatchTiles];
extern __shared__ __align__(16) unsigned char dynamicShared[];

__device__ __forceinline__ unsigned smem32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ __nv_bfloat16 *stagedH() {
  return reinterpret_cast<__nv_bfloat16 *>(dynamicShared);
}
template <int H> __device__ __forceinline__ __nv_bfloat16 *sharedTile() {
  return reinterpret_cast<__nv_bfloat16 *>(dynamicShared + stagedHBytes(H));
}
template <int G, int H> __device__ __forceinline__ float *quarterSums() {
  return reinterpret_cast<float *>(dynamicShared + stagedHBytes(H) +
                                   extraTileBytes(G, H));
}

__device__ __forceinline__ unsigned long long globalNanoseconds() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
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

// The row of U ([G*H, H]) that row `row` of the block's tiles holds (rows
// are gate-major: gate = row / units), or null for a padding row.
template <int G, int H>
__device__ __forceinline__ const __nv_bfloat16 *rowOfU(const __nv_bfloat16 *u,
                                                       int row) {
  constexpr int kUnits = Shape<G, H>::kUnits;
  int gate = row / kUnits, unit = row % kUnits;
  if (gate >= G)
    return nullptr;
  return u + (size_t)(gate * H + blockIdx.x * kUnits + unit) * H;
}

template <int G, int H>
__device__ __forceinline__ void begin(const __nv_bfloat16 *u,
                                      unsigned *fragments) {
  using S = Shape<G, H>;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4, tile = warp / 4, quarter = warp % 4;
  if (tid == 0) {
    for (int nt = 0; nt < S::kMaxTiles; ++nt)
      asm volatile(
          "mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem32(&rowsIn[nt])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  // Every block's mbarriers exist before any block multicasts into them.
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
  if constexpr (S::kSharedTile) {
    // The last tile's rows, whole, into shared memory.
    __nv_bfloat16 *shared = sharedTile<H>();
    for (int v = tid; v < kTileRows * H / 8; v += S::kThreads) {
      int row = v / (H / 8), col = 8 * (v % (H / 8));
      *reinterpret_cast<uint4 *>(shared + row * S::kLd + col) =
          *reinterpret_cast<const uint4 *>(
              rowOfU<G, H>(u, 3 * kTileRows + row) + col);
    }
  }
  // Lane (g, t)'s A fragments: a0 (row g, k 2t), a1 (row g + 8), a2 (row g,
  // k 2t + 8), a3 (row g + 8, k 2t + 8) of each k16 step; zero for padding.
  const __nv_bfloat16 *loRow = rowOfU<G, H>(u, tile * kTileRows + g);
  const __nv_bfloat16 *hiRow = rowOfU<G, H>(u, tile * kTileRows + g + 8);
  const unsigned *lo =
      loRow ? reinterpret_cast<const unsigned *>(loRow + S::kQuarter * quarter)
            : nullptr;
  const unsigned *hi =
      hiRow ? reinterpret_cast<const unsigned *>(hiRow + S::kQuarter * quarter)
            : nullptr;
#pragma unroll
  for (int kk = 0; kk < S::kSteps; ++kk) {
    fragments[4 * kk] = lo ? lo[8 * kk + t] : 0;
    fragments[4 * kk + 1] = hi ? hi[8 * kk + t] : 0;
    fragments[4 * kk + 2] = lo ? lo[8 * kk + t + 4] : 0;
    fragments[4 * kk + 3] = hi ? hi[8 * kk + t + 4] : 0;
  }
  __syncthreads();
}

template <int G, int H>
__device__ __forceinline__ void
product(int step, int batch, const __nv_bfloat16 *hPrev,
        const unsigned *counter, const unsigned *fragments) {
  using S = Shape<G, H>;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4, tile = warp / 4, quarter = warp % 4;
  const int tiles = batch / kBatchTile;
  __nv_bfloat16 *hs = stagedH();
  if (tid == 0) {
    if (step > 0) {
      // Every block has written h_{t-1}: the counter counts blocks done
      // with each step (zero at launch).
      // Cooperative launches keep every block resident, so the wait ends;
      // should it not (a GPU shared in ways the launch cannot see), the
      // kernel traps after 10 s and the call reports an error instead of
      // hanging.
      unsigned target = gridDim.x * step, now;
      unsigned long long start = globalNanoseconds();
      for (unsigned polls = 1;; ++polls) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                     : "=r"(now)
                     : "l"(counter)
                     : "memory");
        if ((int)(now - target) >= 0)
          break;
        if (polls % 1024 == 0 && globalNanoseconds() - start > 10000000000ull)
          __trap();
      }
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
          "r"(kBatchTile * H * 2)
          : "memory");
      // This block's half of the tile's rows, to both blocks of the cluster.
      for (int row = kBatchTile * nt + (int)rank; row < kBatchTile * (nt + 1);
           row += kCluster)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::"
                     "complete_tx::bytes.multicast::cluster [%0], [%1], %2, "
                     "[%3], %4;" ::"r"(smem32(hs + row * S::kLd)),
                     "l"(hPrev + (size_t)row * H), "r"(H * 2),
                     "r"(smem32(&rowsIn[nt])),
                     "h"((unsigned short)((1 << kCluster) - 1))
                     : "memory");
    }
  }
  float *mine = quarterSums<G, H>() + quarter * S::kSumsStride;
  const __nv_bfloat16 *bBase =
      hs + (lane % 8) * S::kLd + S::kQuarter * quarter + 8 * ((lane / 8) % 2);
  // The shared tile (the LSTM): warp 0 of a quarter takes batch
  // tiles 0 and 1, warps 1 and 2 take tiles 2 and 3.
  auto ownsShared = [&](int nt) { return tile == 0 ? nt < 2 : nt == tile + 1; };
  const __nv_bfloat16 *aShared = sharedTile<H>() +
                                 (lane % 8 + 8 * ((lane / 8) % 2)) * S::kLd +
                                 8 * (lane / 16) + S::kQuarter * quarter;
#pragma unroll
  for (int nt = 0; nt < S::kMaxTiles; ++nt) {
    if (nt >= tiles)
      break;
    waitPhase(&rowsIn[nt], step & 1);
    const __nv_bfloat16 *bTile = bBase + nt * kBatchTile * S::kLd;
    const int b = nt * kBatchTile + 2 * t;
    float acc[4] = {};
#pragma unroll
    for (int kk = 0; kk < S::kSteps; ++kk) {
      unsigned b0, b1;
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                   : "=r"(b0), "=r"(b1)
                   : "r"(smem32(bTile + 16 * kk)));
      mmaBf16(acc, fragments + 4 * kk, b0, b1);
    }
    // acc: rows (g, g + 8) of the warp's tile, batch rows b, b + 1.
    const int row = tile * kTileRows + g;
    mine[b * S::kSumsLd + row] = acc[0];
    mine[(b + 1) * S::kSumsLd + row] = acc[1];
    mine[b * S::kSumsLd + row + 8] = acc[2];
    mine[(b + 1) * S::kSumsLd + row + 8] = acc[3];
    if constexpr (S::kSharedTile) {
      if (ownsShared(nt)) {
        float accS[4] = {};
#pragma unroll
        for (int kk = 0; kk < S::kSteps; ++kk) {
          unsigned a[4], b0, b1;
          asm volatile(
              "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
              : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
              : "r"(smem32(aShared + 16 * kk)));
          asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                       : "=r"(b0), "=r"(b1)
                       : "r"(smem32(bTile + 16 * kk)));
          mmaBf16(accS, a, b0, b1);
        }
        const int rowS = 3 * kTileRows + g;
        mine[b * S::kSumsLd + rowS] = accS[0];
        mine[(b + 1) * S::kSumsLd + rowS] = accS[1];
        mine[b * S::kSumsLd + rowS + 8] = accS[2];
        mine[(b + 1) * S::kSumsLd + rowS + 8] = accS[3];
      }
    }
  }
  __syncthreads();
}

template <int G, int H>
__device__ __forceinline__ float gateSum(int gate, int b, int unit) {
  using S = Shape<G, H>;
  const float *q =
      quarterSums<G, H>() + b * S::kSumsLd + gate * S::kUnits + unit;
  return q[0] + q[S::kSumsStride] + q[2 * S::kSumsStride] +
         q[3 * S::kSumsStride];
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
