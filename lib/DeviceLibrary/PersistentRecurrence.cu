//===- PersistentRecurrence.cu - One kernel for a whole recurrence --------===//
//
// Device library linked into the kernels of eligible scans (bf16, f16 or
// TF32 recurrent matmul, docs/persistent-recurrences.md): compiled to LLVM
// bitcode by clang and linked by gpu-module-to-binary, so the generated kernel
// calls these functions and LLVM inlines them. The generated kernel owns the
// time loop and the cell's pointwise step; this file owns what is written once:
// the weights held in registers, the step's vector staged into shared
// memory by bulk copies multicast to the two blocks of a cluster, the
// tensor-core product and the grid-wide step barrier.
//
// Layout (include/rnn/DeviceLibrary/PersistentRecurrence.h). Block k owns
// hidden units [Uk, Uk + U) (U = 16, or 8 in the TF32 layouts of three and
// four gates). Forward: its rows are q·H + Uk + u of U ([G·H, H], rows are
// output columns), gate-major, in 16-row tiles; the staged vector is
// h_{t-1} [B, H]. Backward (dh = dgates x U, 16-bit only): its one tile's
// row u is column 16k + u of U over the G·H inputs; the staged vector is
// the step's gate gradients [B, G·H]. Warp (tile, slice) holds its tile's
// rows over its slice of the inputs as mma A fragments (Layout::fragments
// registers a lane, H / 16 but in K parts, the array the caller passes,
// which becomes registers once inlined): 16-bit operands, H / 4 inputs as
// m16n8k16 fragments; f32 ones,
// H / 8 inputs rounded to TF32 as m16n8k8 fragments, the staged f32 vector
// read as it is (the tensor cores take its upper 19 bits: truncated to TF32).
// From H = 1472 the LSTM's fourth tile does not fit in registers: its rows stay
// in shared memory and the three warps of a slice share its product by batch
// tiles. The LSTM's backward from H = 960 stages its gate gradients in two K
// parts (Layout::parts): 2G slices, each with H / 2 inputs, a quarter in each
// part (H / 8 registers a lane); the product multiplies the first part's
// columns of the rows, then stages the second into the same buffer. Each
// slice's sums go to a region of their own, batch-major, and rowSum adds them.
//
// A recurrence whose H is not a multiple of 64 runs on the entry points of
// the next one: begin() takes the real H and loads zero weights for the
// padding units and inputs, whose staged columns the caller zeroes.
//
// Preconditions (checked by the generated host code before the launch):
// the layout's blocks in clusters of 2, threads and dynamic shared memory, a
// batch of 1 to the layout's maxBatch rows, the step counter zero at launch.
//
//===----------------------------------------------------------------------===//

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

using namespace rnn::persistent;
constexpr int kCluster = kClusterSize;

// The staged vector's element: the 16-bit operands' bits, or f32.
template <Operands O> struct Element {
  using Type = unsigned short;
};
template <> struct Element<Operands::TF32> {
  using Type = float;
};

template <Direction D, Operands O, int G, int H> struct Shape {
  static constexpr Layout kLayout = layoutFor(D, O, G, H);
  static constexpr bool kForward = D == Direction::Forward;
  static constexpr bool kTf32 = O == Operands::TF32;
  using T = typename Element<O>::Type;
  static constexpr int kBytes = operandBytes(O);
  static constexpr int kUnits = kLayout.unitsPerBlock;
  static constexpr int kMaxTiles = kLayout.maxBatch / kBatchTile;
  static constexpr int kThreads = kLayout.threads;
  static constexpr int kSlices = kLayout.slices;
  static constexpr int kWidth = kLayout.stagedWidth;
  // K parts staged one after the other (2 for the backward whose rows do
  // not fit whole), each kPartWidth columns of the rows.
  static constexpr int kParts = kLayout.parts;
  static constexpr int kPartWidth = kWidth / kParts;
  // Elements of a staged row in global memory, and in shared memory (a
  // part's).
  static constexpr int kLdGlobal = stagedRowElements(kWidth);
  static constexpr int kLd = stagedRowElements(kPartWidth);
  static constexpr int kSlice = kWidth / kSlices;         // inputs a warp
  static constexpr int kPartSlice = kPartWidth / kSlices; // of them a part
  static constexpr int kK = kTf32 ? 8 : 16;               // the mma's k
  static constexpr int kSteps = kSlice / kK;              // mmas a chain
  static constexpr int kPartSteps = kSteps / kParts;      // of them a part
  static_assert(kParts == 1 || (!kForward && !kTf32),
                "K parts: the 16-bit backward only");
  static constexpr int kSumsLd = kLayout.rowTiles * kTileRows + 1;
  static constexpr int kSumsStride = kLayout.maxBatch * kSumsLd;
  static constexpr int kStagedBytes =
      kLayout.maxBatch * stagedRowBytes(kPartWidth, kBytes);
  // The 16-bit LSTM from H = 1472: its fourth gate's tile in shared memory.
  static constexpr bool kSharedTile = kLayout.rowTiles > kLayout.registerTiles;
  static constexpr int kSharedTileBytes =
      kSharedTile ? kTileRows * stagedRowBytes(kWidth, 2) : 0;
  // How the product goes through the batch tiles (H100, 2026-11-27, the
  // bf16 LSTM and GRU, docs/performance-notes.md): with registers to spare,
  // all tiles first, then their chains interleaved (the H = 768 forward
  // kernel took 2.9 ms at T = 1024, B = 16 against 3.9 tile by tile); where
  // a lane has few (the forward at H = 1984 and 2048, and the LSTM's at
  // 1344 and 1408), tile by tile as each arrives (the GRU's forward at
  // H = 2048, T = 100, B = 32: 0.74 ms against 0.86-0.90 interleaved, which
  // spilled). Timed both ways at H = 768 and 2048; the LSTM's interleaved
  // product with its shared tile (H = 1472 to 1920) checked at 1536.
  static constexpr bool kInterleave =
      spareRegisters(kLayout) >= kRoomyRegisters;
  // The low-latency exchange (the forward only): values a word, words a row
  // and the block's words of a row.
  static constexpr int kValuesPerWord = 4 / kBytes;
  static constexpr int kRowWords = lowLatencyRowWords(kWidth, O);
  static constexpr int kBlockWords = kUnits / kValuesPerWord;
  // The words a thread polls at once, and the most rows a tile exchanges
  // through the buffer (the header's rule, which the host code follows).
  static constexpr int kWordsPerLane = lowLatencyWordsPerLane(kLayout, D, H);
  static constexpr int kLowLatencyMaxRows = lowLatencyMaxRows(kLayout, D, O, H);
  // Whether a batch tile of `batch` rows exchanges through the low-latency
  // buffer `exchange` (null where the host did not allocate it).
  static __device__ __forceinline__ bool
  lowLatency(int batch, const unsigned long long *exchange) {
    return kLowLatencyMaxRows > 0 && exchange && batch <= kLowLatencyMaxRows;
  }
};

// One mbarrier per n8 tile of batch rows: the product starts on the first.
__shared__ __align__(8) unsigned long long rowsIn[kMaxBatchTiles];
// The vector stage() copies from, for the later K parts' copies.
__shared__ const void *stagedFrom;
// The recurrence's H (begin's `hidden`): the low-latency exchange publishes
// zeros for the padding units past it.
__shared__ int recurrenceHidden;
extern __shared__ __align__(16) unsigned char dynamicShared[];

__device__ __forceinline__ unsigned smem32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

template <class S> __device__ __forceinline__ typename S::T *stagedVector() {
  return reinterpret_cast<typename S::T *>(dynamicShared);
}
template <class S> __device__ __forceinline__ __nv_bfloat16 *sharedTile() {
  return reinterpret_cast<__nv_bfloat16 *>(dynamicShared + S::kStagedBytes);
}
// The block's new values of the step, [rows, units] f32, that publish()
// collects and release() sends: in the staged vector's region, which the
// product has read before the cell's step starts and stage() rewrites
// only after the release.
__device__ __forceinline__ float *outbox() {
  return reinterpret_cast<float *>(dynamicShared);
}

template <class S> __device__ __forceinline__ float *sliceSums() {
  return reinterpret_cast<float *>(dynamicShared + S::kStagedBytes +
                                   S::kSharedTileBytes);
}

__device__ __forceinline__ unsigned long long globalNanoseconds() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// Polls `ready` until it returns true. Every block is resident (cooperative
// launch), so what it waits for arrives; should it not (a GPU shared in ways
// the launch cannot see), the kernel traps after 10 s and the call reports an
// error instead of hanging.
template <class Ready> __device__ __forceinline__ void spinUntil(Ready ready) {
  unsigned long long start = globalNanoseconds();
  for (unsigned polls = 1; !ready(); ++polls)
    if (polls % 1024 == 0 && globalNanoseconds() - start > 10000000000ull)
      __trap();
}

// One tensor-core product into f32 accumulators: m16n8k16 of 16-bit
// operands (bf16, or f16), or m16n8k8 of TF32 ones.
template <Operands O>
__device__ __forceinline__ void mma(float (&d)[4], const unsigned *a,
                                    unsigned b0, unsigned b1) {
  if constexpr (O == Operands::TF32)
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  else if constexpr (O == Operands::F16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
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

// The B fragment (b0, b1) of an mma from the staged vector at `p`, the
// lane's address of the chain's step: 16-bit, ldmatrix's two 8x8 tiles;
// f32, the lane's two adjacent inputs (the A fragments hold the same inputs
// in the same order: k = t and t + 4 of the mma are inputs 2t and 2t + 1).
__device__ __forceinline__ void loadB(const unsigned short *p, unsigned &b0,
                                      unsigned &b1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
               : "=r"(b0), "=r"(b1)
               : "r"(smem32(p)));
}
__device__ __forceinline__ void loadB(const float *p, unsigned &b0,
                                      unsigned &b1) {
  asm volatile("ld.shared.v2.b32 {%0,%1}, [%2];"
               : "=r"(b0), "=r"(b1)
               : "r"(smem32(p)));
}

// f32 `x` rounded to the nearest TF32 value, as its bits.
__device__ __forceinline__ unsigned toTf32(float x) {
  unsigned y;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(y) : "f"(x));
  return y;
}

// The layout's H (a multiple of 64) may exceed the recurrence's `hidden`:
// the units and inputs past it are padding, with zero weights.

// Forward: the row of U ([G*hidden, hidden]) that row `row` of the block's
// tiles holds (rows are gate-major: gate = row / units), or null for a
// padding row (past `hidden`, or an odd G's last half tile).
template <class S, int G>
__device__ __forceinline__ const typename S::T *rowOfU(const void *u, int row,
                                                       int hidden) {
  int gate = row / S::kUnits;
  int unit = blockIdx.x * S::kUnits + row % S::kUnits;
  if (gate >= G || unit >= hidden)
    return nullptr;
  return static_cast<const typename S::T *>(u) +
         (size_t)(gate * hidden + unit) * hidden;
}

// The A fragment word of the block's row `row` at inputs k, k + 1 (k even,
// in the layout's input space): forward, two adjacent entries of a row of
// U; backward, entries (k, n) and (k + 1, n) of U for the row's unit n,
// input k being unit k % H of gate k / H. Zero past `hidden`.
template <class S, int G, int H>
__device__ __forceinline__ unsigned fragmentWord(const void *u, int row, int k,
                                                 int hidden) {
  if constexpr (S::kForward) {
    const unsigned short *r = rowOfU<S, G>(u, row, hidden);
    if (!r || k >= hidden)
      return 0u;
    if (hidden % 2 == 0) // both in range, the pair 4-byte aligned
      return *reinterpret_cast<const unsigned *>(r + k);
    return (unsigned)r[k] | (k + 1 < hidden ? (unsigned)r[k + 1] << 16 : 0u);
  } else {
    const unsigned short *w = static_cast<const unsigned short *>(u);
    int n = blockIdx.x * S::kUnits + row, gate = k / H, j = k % H;
    if (n >= hidden || j >= hidden)
      return 0u;
    size_t at = (size_t)(gate * hidden + j) * hidden + n;
    return (unsigned)w[at] |
           (j + 1 < hidden ? (unsigned)w[at + hidden] << 16 : 0u);
  }
}

// The TF32 forward's A fragment entry of the block's row `row` at input k:
// U's f32 entry rounded to TF32, zero past `hidden`.
template <class S, int G>
__device__ __forceinline__ unsigned tf32Entry(const void *u, int row, int k,
                                              int hidden) {
  const float *r = rowOfU<S, G>(u, row, hidden);
  return r && k < hidden ? toTf32(r[k]) : 0u;
}

template <Direction D, Operands O, int G, int H>
__device__ __forceinline__ void begin(const void *u, unsigned *fragments,
                                      int hidden) {
  using S = Shape<D, O, G, H>;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4, tile = warp / S::kSlices,
            slice = warp % S::kSlices;
  if (tid == 0) {
    recurrenceHidden = hidden;
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
    // The last tile's rows, whole, into shared memory (forward only).
    __nv_bfloat16 *shared = sharedTile<S>();
    for (int v = tid; v < kTileRows * H / 8; v += S::kThreads) {
      int row = v / (H / 8), col = 8 * (v % (H / 8));
      const unsigned short *r =
          rowOfU<S, G>(u, S::kLayout.registerTiles * kTileRows + row, hidden);
      unsigned short *to =
          reinterpret_cast<unsigned short *>(shared + row * S::kLd + col);
      if (r && hidden == H) {
        *reinterpret_cast<uint4 *>(to) =
            *reinterpret_cast<const uint4 *>(r + col);
      } else {
        for (int i = 0; i < 8; ++i)
          to[i] = r && col + i < hidden ? r[col + i] : 0;
      }
    }
  }
  const int lo = tile * kTileRows + g, hi = lo + 8;
#pragma unroll
  for (int kk = 0; kk < S::kSteps; ++kk) {
    // Chain step kk of the warp's slice: in part kk / kPartSteps, the
    // slice's kPartSlice inputs of that part.
    const int part = kk / S::kPartSteps;
    int k = part * S::kPartWidth + S::kPartSlice * slice +
            S::kK * (kk % S::kPartSteps) + 2 * t;
    if constexpr (S::kTf32) {
      // Lane (g, t)'s m16n8k8 A fragments: a0 (row g, k t), a1 (row g + 8),
      // a2 (row g, k t + 4), a3 (row g + 8, k t + 4), k t and t + 4 being
      // inputs 2t and 2t + 1 of the step (loadB's order).
      fragments[4 * kk] = tf32Entry<S, G>(u, lo, k, hidden);
      fragments[4 * kk + 1] = tf32Entry<S, G>(u, hi, k, hidden);
      fragments[4 * kk + 2] = tf32Entry<S, G>(u, lo, k + 1, hidden);
      fragments[4 * kk + 3] = tf32Entry<S, G>(u, hi, k + 1, hidden);
    } else {
      // Lane (g, t)'s m16n8k16 A fragments: a0 (row g, k 2t), a1 (row g + 8),
      // a2 (row g, k 2t + 8), a3 (row g + 8, k 2t + 8).
      fragments[4 * kk] = fragmentWord<S, G, H>(u, lo, k, hidden);
      fragments[4 * kk + 1] = fragmentWord<S, G, H>(u, hi, k, hidden);
      fragments[4 * kk + 2] = fragmentWord<S, G, H>(u, lo, k + 8, hidden);
      fragments[4 * kk + 3] = fragmentWord<S, G, H>(u, hi, k + 8, hidden);
    }
  }
  __syncthreads();
}

// Stores an mma's four sums: rows (row, row + 8) of the block's tiles
// (lane g's) for batch rows b and b + 1 (lane t's), into the slice's region.
template <class S>
__device__ __forceinline__ void storeSums(float *mine, int b, int row, float s0,
                                          float s1, float s2, float s3) {
  mine[b * S::kSumsLd + row] = s0;
  mine[(b + 1) * S::kSumsLd + row] = s1;
  mine[b * S::kSumsLd + row + 8] = s2;
  mine[(b + 1) * S::kSumsLd + row + 8] = s3;
}

// Stores the accumulator chains of batch tiles 0 .. NT - 1 (their chains
// added): rows (row, row + 8) of the block's tiles for each tile's batch
// rows 2t and 2t + 1 (lane t's), into the slice's sums.
template <class S, int NT, int Chains>
__device__ __forceinline__ void storeChains(const float (&acc)[NT][Chains][4],
                                            float *mine, int row, int t) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    float sum[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sum[i] = acc[nt][0][i];
      if constexpr (Chains == 2)
        sum[i] += acc[nt][1][i];
    }
    storeSums<S>(mine, nt * kBatchTile + 2 * t, row, sum[0], sum[1], sum[2],
                 sum[3]);
  }
}

// Which batch tiles warp `tile` of a slice multiplies by the shared tile
// (the LSTM from H = 1472): warp 0 takes batch tiles 0 and 1, warps 1 and 2
// take tiles 2 and 3 (`first` and `count` of them).
__device__ __forceinline__ void sharedTileBatchTiles(int tile, int &first,
                                                     int &count) {
  first = tile == 0 ? 0 : tile + 1;
  count = tile == 0 ? 2 : 1;
}
// Whether batch tile `nt` is among them (the same rule, as one test).
__device__ __forceinline__ bool ownsSharedBatchTile(int tile, int nt) {
  return tile == 0 ? nt < 2 : nt == tile + 1;
}

// The block's rows times staged batch tile `nt` into the slice's sums, in
// two accumulator chains over alternate k16 steps (a chain of dependent
// mmas waits on each one's latency).
template <class S, Operands O>
__device__ __forceinline__ void
multiplyTile(int nt, const unsigned *fragments, const typename S::T *bBase,
             const __nv_bfloat16 *aShared, float *mine, int tile, int g,
             int t) {
  const typename S::T *bTile = bBase + nt * kBatchTile * S::kLd;
  const int b = nt * kBatchTile + 2 * t;
  float acc[2][4] = {};
#pragma unroll
  for (int kk = 0; kk < S::kSteps; ++kk) {
    unsigned b0, b1;
    loadB(bTile + S::kK * kk, b0, b1);
    mma<O>(acc[kk % 2], fragments + 4 * kk, b0, b1);
  }
  // acc: rows (g, g + 8) of the warp's tile, batch rows b, b + 1.
  storeSums<S>(mine, b, tile * kTileRows + g, acc[0][0] + acc[1][0],
               acc[0][1] + acc[1][1], acc[0][2] + acc[1][2],
               acc[0][3] + acc[1][3]);
  if constexpr (S::kSharedTile) {
    if (ownsSharedBatchTile(tile, nt)) {
      float accS[2][4] = {};
#pragma unroll
      for (int kk = 0; kk < S::kSteps; ++kk) {
        unsigned a[4], b0, b1;
        asm volatile(
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
            : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
            : "r"(smem32(aShared + 16 * kk)));
        loadB(bTile + 16 * kk, b0, b1);
        mma<O>(accS[kk % 2], a, b0, b1);
      }
      storeSums<S>(mine, b, S::kLayout.registerTiles * kTileRows + g,
                   accS[0][0] + accS[1][0], accS[0][1] + accS[1][1],
                   accS[0][2] + accS[1][2], accS[0][3] + accS[1][3]);
    }
  }
}

// The block's rows times the staged batch tiles 0 .. NT - 1, all arrived,
// into the slice's sums: one accumulator chain per batch tile (two over
// alternate k16 steps for a single tile), interleaved.
template <class S, Operands O, int NT>
__device__ __forceinline__ void
multiplyTiles(const unsigned *fragments, const typename S::T *bBase,
              const __nv_bfloat16 *aShared, float *mine, int tile, int g,
              int t) {
  constexpr int kChains = NT == 1 ? 2 : 1;
  float acc[NT][kChains][4] = {};
  auto step = [&](int nt, int kk) {
    unsigned b0, b1;
    loadB(bBase + nt * kBatchTile * S::kLd + S::kK * kk, b0, b1);
    mma<O>(acc[nt][kk % kChains], fragments + 4 * kk, b0, b1);
  };
#pragma unroll
  for (int kk = 0; kk < S::kSteps; ++kk)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      step(nt, kk);
  storeChains<S, NT, kChains>(acc, mine, tile * kTileRows + g, t);
  if constexpr (S::kSharedTile) {
    int first, count;
    sharedTileBatchTiles(tile, first, count);
    float accS[2][4] = {};
#pragma unroll
    for (int kk = 0; kk < S::kSteps; ++kk) {
      unsigned a[4];
      asm volatile(
          "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
          : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
          : "r"(smem32(aShared + 16 * kk)));
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        if (j >= count || first + j >= NT)
          continue;
        unsigned b0, b1;
        loadB(bBase + (first + j) * kBatchTile * S::kLd + 16 * kk, b0, b1);
        mma<O>(accS[j], a, b0, b1);
      }
    }
    const int rowS = S::kLayout.registerTiles * kTileRows + g;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      if (j >= count || first + j >= NT)
        continue;
      storeSums<S>(mine, (first + j) * kBatchTile + 2 * t, rowS, accS[j][0],
                   accS[j][1], accS[j][2], accS[j][3]);
    }
  }
}

// An 8-byte word of the low-latency buffer, read or written as one access
// (single-copy atomic: its step and its values always belong together).
__device__ __forceinline__ unsigned long long
loadWord(const unsigned long long *at) {
  unsigned long long word;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];"
               : "=l"(word)
               : "l"(at)
               : "memory");
  return word;
}
__device__ __forceinline__ void storeWord(unsigned long long *at,
                                          unsigned long long word) {
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(at), "l"(word)
               : "memory");
}

// The staged vector's bits of f32 `value`: itself, or rounded to bf16 or f16
// (exact for the values the cell stored in that type).
template <Operands O> __device__ __forceinline__ unsigned encode(float value) {
  if constexpr (O == Operands::TF32)
    return __float_as_uint(value);
  else if constexpr (O == Operands::F16)
    return __half_as_ushort(__float2half_rn(value));
  else
    return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

// stage() of a tile that exchanges through the low-latency buffer
// `exchange` (the tile's rows of this step's half, [batch, kRowWords]):
// every thread loads its words (up to kLowLatencyWordsPerLane, all in
// flight at once) until each carries step `waitSteps`, then writes their
// values into the staged vector, and thread 0 completes the tile's
// mbarrier phase, on which the product waits as after the bulk copies.
template <class S>
__device__ __forceinline__ void
stageLowLatency(int waitSteps, int batch, const unsigned long long *exchange) {
  const int tid = threadIdx.x;
  const int total = batch * S::kRowWords;
  constexpr int kWords = S::kWordsPerLane;
  // The release's reads of the outbox (the staged region) are done.
  __syncthreads();
  unsigned long long words[kWords];
#pragma unroll
  for (int j = 0; j < kWords; ++j) {
    const int i = tid + j * S::kThreads;
    words[j] = i < total ? loadWord(exchange + i) : 0ull;
  }
  // Reloads the words of another step until none is left.
  spinUntil([&] {
    bool ready = true;
#pragma unroll
    for (int j = 0; j < kWords; ++j) {
      const int i = tid + j * S::kThreads;
      if (i < total && (unsigned)(words[j] >> 32) != (unsigned)waitSteps) {
        ready = false;
        words[j] = loadWord(exchange + i);
      }
    }
    return ready;
  });
  typename S::T *staged = stagedVector<S>();
#pragma unroll
  for (int j = 0; j < kWords; ++j) {
    const int i = tid + j * S::kThreads;
    if (i < total) {
      const int row = i / S::kRowWords,
                column = (i % S::kRowWords) * S::kValuesPerWord;
      *reinterpret_cast<unsigned *>(staged + row * S::kLd + column) =
          (unsigned)words[j];
    }
  }
  __syncthreads();
  if (tid == 0)
    asm volatile(
        "mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem32(&rowsIn[0]))
        : "memory");
}

// Warp 0 of the block: part `part` of the staged vector at `rows` (its
// batch rows stagedRowElements(width) apart), this block's half of each
// 8-row tile's rows, multicast to both blocks of the cluster, completing
// each tile's mbarrier phase: one copy a tile, issued by lane `tile`, or,
// for the backward's rows (G times wider), one copy a row, issued by a
// lane each. Bulk copies issue at about 100 cycles each, serially per SM;
// the backward's wider rows arrived sooner a copy a row (its step 0 to 6 %
// faster for the LSTM and GRU at H = 768 and the GRU at 1024, B = 8 to 32;
// the forward's within 5 % either way; H100, docs/performance-notes.md).
// A layout of one part copies whole rows with their padding (a tile's
// rows are contiguous), one of K parts each row's part's columns.
template <class S>
__device__ __forceinline__ void issueCopies(int part, const typename S::T *rows,
                                            int batch) {
  const int lane = threadIdx.x % 32;
  const int tiles = (batch + kBatchTile - 1) / kBatchTile;
  typename S::T *staged = stagedVector<S>();
  constexpr int kHalf = kBatchTile / kCluster;
  constexpr int kRowsPerCopy = S::kForward ? kHalf : 1;
  constexpr int kRowElements = S::kParts == 1 ? S::kLd : S::kPartWidth;
  static_assert(S::kParts == 1 || kRowsPerCopy == 1, "a copy a row's part");
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (lane < tiles) {
    const int nt = lane, end = min(kBatchTile * (nt + 1), batch);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                     smem32(&rowsIn[nt])),
                 "r"((end - kBatchTile * nt) * kRowElements * S::kBytes)
                 : "memory");
  }
  if (lane < tiles * (kHalf / kRowsPerCopy)) {
    const int nt = lane / (kHalf / kRowsPerCopy);
    const int first = kBatchTile * nt + (int)rank * kHalf +
                      kRowsPerCopy * (lane % (kHalf / kRowsPerCopy));
    const int count = min(first + kRowsPerCopy, batch) - first;
    if (count > 0)
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::"
          "complete_tx::bytes.multicast::cluster [%0], [%1], %2, "
          "[%3], %4;" ::"r"(smem32(staged + first * S::kLd)),
          "l"(rows + (size_t)first * S::kLdGlobal + part * S::kPartWidth),
          "r"(count * kRowElements * S::kBytes), "r"(smem32(&rowsIn[nt])),
          "h"((unsigned short)((1 << kCluster) - 1))
          : "memory");
  }
}

// Waits until every block has released `waitSteps` steps (none for 0) and
// starts staging the [batch, width] vector at `vector` (rows
// stagedRowElements(width) apart), or, for a tile that exchanges through the
// low-latency buffer `exchange`, stages it from there (stageLowLatency).
// Returns once the wait is over in every thread: the wait's acquire empties
// L1, so what the caller prefetches into L1 for the step goes after it.
template <Direction D, Operands O, int G, int H>
__device__ __forceinline__ void
stage(int waitSteps, int batch, const void *vector, const unsigned *counter,
      const unsigned long long *exchange) {
  using S = Shape<D, O, G, H>;
  if constexpr (S::kLowLatencyMaxRows > 0)
    if (waitSteps > 0 && S::lowLatency(batch, exchange)) {
      stageLowLatency<S>(waitSteps, batch, exchange);
      return;
    }
  const int warp = threadIdx.x / 32;
  // Whole 8-row tiles and a last partial one: its missing rows are never
  // staged, and the columns of the product they feed are never read.
  const typename S::T *rows = static_cast<const typename S::T *>(vector);
  if (warp == 0) {
    if (waitSteps > 0) {
      // Every block has written the vector: the counter counts blocks done
      // with each step (zero at launch). The warp's lanes read it together
      // (one load), then each issues a tile's copy.
      const unsigned target = gridDim.x * waitSteps;
      spinUntil([&] {
        unsigned now;
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                     : "=r"(now)
                     : "l"(counter)
                     : "memory");
        return (int)(now - target) >= 0;
      });
      // The bulk copies below read through the async proxy what the other
      // blocks wrote through the generic one.
      asm volatile("fence.proxy.async.global;" ::: "memory");
    }
    if constexpr (S::kParts > 1)
      if (threadIdx.x == 0)
        stagedFrom = vector;
    issueCopies<S>(0, rows, batch);
  }
  __syncthreads();
}

// The backward in K parts (Layout::parts): the block's one tile times each
// part of the staged batch tiles 0 .. NT - 1 in turn, the accumulators
// carried across the parts. stage() copied part 0; part p > 0 goes into the
// same buffer once every warp of both blocks of the cluster has multiplied
// part p - 1 (the copies are multicast into both). Each part completes a
// phase of the tiles' mbarriers: phase `phase`·parts + p.
template <class S, Operands O, int NT>
__device__ __forceinline__ void
multiplyTilesInParts(int phase, int batch, const unsigned *fragments,
                     const typename S::T *bBase, float *mine, int g, int t) {
  constexpr int kChains = NT == 1 ? 2 : 1;
  float acc[NT][kChains][4] = {};
#pragma unroll
  for (int part = 0; part < S::kParts; ++part) {
    if (part > 0) {
      asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                   "barrier.cluster.wait.acquire.aligned;" ::
                       : "memory");
      if (threadIdx.x / 32 == 0)
        issueCopies<S>(part, static_cast<const typename S::T *>(stagedFrom),
                       batch);
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      waitPhase(&rowsIn[nt], (phase * S::kParts + part) & 1);
#pragma unroll
    for (int kk = 0; kk < S::kPartSteps; ++kk)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        unsigned b0, b1;
        loadB(bBase + nt * kBatchTile * S::kLd + S::kK * kk, b0, b1);
        mma<O>(acc[nt][kk % kChains],
               fragments + 4 * (part * S::kPartSteps + kk), b0, b1);
      }
  }
  storeChains<S, NT, kChains>(acc, mine, g, t);
}

// A count of batch tiles known at compile time.
template <int N> struct BatchTiles {
  static constexpr int value = N;
};

// Calls `f` with BatchTiles<NT>{}, NT the count of staged batch tiles
// `batchTiles` (1 to the layout's kMaxTiles) as a constant: the products'
// accumulator chains are arrays of NT.
template <class S, class F>
__device__ __forceinline__ void withBatchTiles(int batchTiles, F &&f) {
  static_assert(S::kMaxTiles >= 1 && S::kMaxTiles <= 4, "1 to 4 tiles");
  if (batchTiles == 1 || S::kMaxTiles == 1)
    f(BatchTiles<1>{});
  else if (batchTiles == 2 || S::kMaxTiles == 2)
    f(BatchTiles<(S::kMaxTiles < 2 ? 1 : 2)>{});
  else if (batchTiles == 3 || S::kMaxTiles == 3)
    f(BatchTiles<(S::kMaxTiles < 3 ? 1 : 3)>{});
  else
    f(BatchTiles<S::kMaxTiles>{});
}

// The warp's part of multiply(): its tile's rows times the staged batch
// tiles, into its slice's sums.
template <class S, Operands O>
__device__ __forceinline__ void multiplyWarpTile(int phase, int batch,
                                                 const unsigned *fragments) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4, tile = warp / S::kSlices,
            slice = warp % S::kSlices;
  const int batchTiles = (batch + kBatchTile - 1) / kBatchTile;
  const typename S::T *staged = stagedVector<S>();
  float *mine = sliceSums<S>() + slice * S::kSumsStride;
  // The lane's address of the first step's B fragment (loadB): 16-bit,
  // ldmatrix's row lane % 8 of the first or second 8x8 tile; f32, batch row
  // g's inputs 2t and 2t + 1.
  const typename S::T *bBase =
      S::kTf32 ? staged + g * S::kLd + S::kPartSlice * slice + 2 * t
               : staged + (lane % 8) * S::kLd + S::kPartSlice * slice +
                     8 * ((lane / 8) % 2);
  const __nv_bfloat16 *aShared = sharedTile<S>() +
                                 (lane % 8 + 8 * ((lane / 8) % 2)) * S::kLd +
                                 8 * (lane / 16) + S::kSlice * slice;
  if constexpr (S::kParts > 1) {
    withBatchTiles<S>(batchTiles, [&](auto tiles) {
      multiplyTilesInParts<S, O, decltype(tiles)::value>(
          phase, batch, fragments, bBase, mine, g, t);
    });
  } else if constexpr (S::kInterleave) {
    // All tiles, then their chains interleaved.
    for (int nt = 0; nt < batchTiles; ++nt)
      waitPhase(&rowsIn[nt], phase & 1);
    withBatchTiles<S>(batchTiles, [&](auto tiles) {
      multiplyTiles<S, O, decltype(tiles)::value>(fragments, bBase, aShared,
                                                  mine, tile, g, t);
    });
  } else {
    // Tile by tile as each arrives: the later tiles' copies land while the
    // earlier ones multiply.
#pragma unroll
    for (int nt = 0; nt < S::kMaxTiles; ++nt) {
      if (nt >= batchTiles)
        break;
      waitPhase(&rowsIn[nt], phase & 1);
      multiplyTile<S, O>(nt, fragments, bBase, aShared, mine, tile, g, t);
    }
  }
}

// Multiplies the vector that stage() of this `phase` copies in by the
// block's rows of tiles [firstTile, firstTile + tiles) into the slices'
// sums: every tile for a step of one product; for a step of dependent
// stages, the tiles that hold the stage's gates (the other tiles' warps
// wait at the block barrier). The 16-bit weights and vector are bf16 or
// f16 (the same bits move either way; only the product differs); the TF32
// ones are f32.
template <Direction D, Operands O, int G, int H>
__device__ __forceinline__ void multiply(int phase, int batch,
                                         const unsigned *fragments,
                                         int firstTile, int tiles) {
  using S = Shape<D, O, G, H>;
  const int warp = threadIdx.x / 32;
  const int tile = warp / S::kSlices;
  // (A layout whose last tile is in shared memory runs one product a step:
  // its three register tiles' warps share that tile. One in K parts has one
  // tile, whose every warp meets at the cluster barrier between the parts.)
  if (S::kSharedTile || S::kParts > 1 ||
      (tile >= firstTile && tile < firstTile + tiles))
    multiplyWarpTile<S, O>(phase, batch, fragments);
  __syncthreads();
}

// The product's value for batch row b at the block's row gate * units +
// unit (forward: the gate's sum for the unit; backward: gate 0, the unit's
// dh).
template <Direction D, Operands O, int G, int H>
__device__ __forceinline__ float rowSum(int gate, int b, int unit) {
  using S = Shape<D, O, G, H>;
  const float *q = sliceSums<S>() + b * S::kSumsLd + gate * S::kUnits + unit;
  float sum = 0.f;
#pragma unroll
  for (int s = 0; s < S::kSlices; ++s)
    sum += q[s * S::kSumsStride];
  return sum;
}

// The cell's new value of the block's unit `unit` in batch row `row`, for
// the low-latency exchange through `exchange` (the tile's rows of the next
// step's half, as release() gets it; nothing where the tile does not use
// it: null, or more rows than the exchange takes).
template <Direction D, Operands O, int G, int H>
__device__ __forceinline__ void publish(float value, int row, int unit,
                                        int batch,
                                        const unsigned long long *exchange) {
  using S = Shape<D, O, G, H>;
  if constexpr (S::kLowLatencyMaxRows > 0)
    if (S::lowLatency(batch, exchange))
      outbox()[row * S::kUnits + unit] = value;
}

// The block's part of the next vector is written: through the low-latency
// buffer `exchange` (the tile's rows of the next step's half) as words of
// step `step`, the values publish() collected (zeros for padding units), or
// else by the counter, whose release makes the block's stores of the
// vector visible to the other blocks' bulk copies.
template <Direction D, Operands O, int G, int H>
__device__ __forceinline__ void
release(unsigned *counter, unsigned long long *exchange, int batch, int step) {
  using S = Shape<D, O, G, H>;
  // Every thread's stores (and publish()es) of the step are done.
  __syncthreads();
  const int tid = threadIdx.x;
  if (S::lowLatency(batch, exchange)) {
    if (tid < batch * S::kBlockWords) {
      const int row = tid / S::kBlockWords, w = tid % S::kBlockWords;
      unsigned bits = 0;
#pragma unroll
      for (int v = 0; v < S::kValuesPerWord; ++v) {
        const int unit = w * S::kValuesPerWord + v;
        const float value =
            (int)blockIdx.x * S::kUnits + unit < recurrenceHidden
                ? outbox()[row * S::kUnits + unit]
                : 0.f;
        bits |= encode<O>(value) << (16 * v);
      }
      storeWord(exchange + row * S::kRowWords + blockIdx.x * S::kBlockWords + w,
                (unsigned long long)(unsigned)step << 32 | bits);
    }
  } else if (tid == 0) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter)
                 : "memory");
  }
}

} // namespace

// Brings the line at `address` (global memory) into L1: the generated kernel
// asks for what a step's pointwise phase will read, before the barrier.
extern "C" __device__ __attribute__((always_inline)) void
rnn_persistent_prefetch_l1(const void *address) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(address));
}

// tanh(x) by the GPU's approximation (relative error below 2^-10): the
// generated kernels of 16-bit recurrences evaluate their cell's tanh with it.
extern "C" __device__ __attribute__((always_inline)) float
rnn_persistent_tanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The entry points, through Entry: a layout the header rejects has entry
// points that trap (the compiler never calls them), and its templates are
// never instantiated.
template <Direction D, Operands O, int G, int H,
          bool Valid = layoutFor(D, O, G, H).valid>
struct Entry {
  static __device__ __forceinline__ void
  begin(const void *u, unsigned *fragments, int hidden) {
    ::begin<D, O, G, H>(u, fragments, hidden);
  }
  static __device__ __forceinline__ void
  stage(int waitSteps, int batch, const void *vector, const unsigned *counter,
        const unsigned long long *exchange) {
    ::stage<D, O, G, H>(waitSteps, batch, vector, counter, exchange);
  }
  static __device__ __forceinline__ void multiply(int phase, int batch,
                                                  const unsigned *fragments,
                                                  int firstTile, int tiles) {
    ::multiply<D, O, G, H>(phase, batch, fragments, firstTile, tiles);
  }
  static __device__ __forceinline__ float sum(int gate, int b, int unit) {
    return rowSum<D, O, G, H>(gate, b, unit);
  }
  static __device__ __forceinline__ void
  publish(float value, int row, int unit, int batch,
          const unsigned long long *exchange) {
    ::publish<D, O, G, H>(value, row, unit, batch, exchange);
  }
  static __device__ __forceinline__ void release(unsigned *counter,
                                                 unsigned long long *exchange,
                                                 int batch, int step) {
    ::release<D, O, G, H>(counter, exchange, batch, step);
  }
};
template <Direction D, Operands O, int G, int H>
struct Entry<D, O, G, H, false> {
  static __device__ void begin(const void *, unsigned *, int) { __trap(); }
  static __device__ void stage(int, int, const void *, const unsigned *,
                               const unsigned long long *) {
    __trap();
  }
  static __device__ void multiply(int, int, const unsigned *, int, int) {
    __trap();
  }
  static __device__ float sum(int, int, int) {
    __trap();
    return 0.f;
  }
  static __device__ void publish(float, int, int, int,
                                 const unsigned long long *) {
    __trap();
  }
  static __device__ void release(unsigned *, unsigned long long *, int, int) {
    __trap();
  }
};

// The entry points the generated kernels call, one set per (direction,
// operands, gates, H), named rnn_persistent_{fwd,bwd}[_f16|_tf32]_g<G>_h<H>_
// <entry> (bf16 without a suffix). Inlined always: the weight fragments
// stay in registers only if every call that touches them is inlined into
// the kernel.
#define RNN_PERSISTENT_ENTRY_POINTS(NAME, D, O, G, H)                          \
  extern "C" __device__ __attribute__((always_inline)) void                    \
  rnn_persistent_##NAME##_g##G##_h##H##_begin(                                 \
      const void *u, unsigned *fragments, int hidden) {                        \
    Entry<D, O, G, H>::begin(u, fragments, hidden);                            \
  }                                                                            \
  extern "C" __device__ __attribute__((always_inline)) void                    \
  rnn_persistent_##NAME##_g##G##_h##H##_stage(                                 \
      int waitSteps, int batch, const void *vector, const unsigned *counter,   \
      const unsigned long long *exchange) {                                    \
    Entry<D, O, G, H>::stage(waitSteps, batch, vector, counter, exchange);     \
  }                                                                            \
  extern "C" __device__ __attribute__((always_inline)) void                    \
  rnn_persistent_##NAME##_g##G##_h##H##_multiply(int phase, int batch,         \
                                                 const unsigned *fragments,    \
                                                 int firstTile, int tiles) {   \
    Entry<D, O, G, H>::multiply(phase, batch, fragments, firstTile, tiles);    \
  }                                                                            \
  extern "C" __device__ __attribute__((always_inline)) float                   \
  rnn_persistent_##NAME##_g##G##_h##H##_sum(int gate, int b, int unit) {       \
    return Entry<D, O, G, H>::sum(gate, b, unit);                              \
  }                                                                            \
  extern "C" __device__ __attribute__((always_inline)) void                    \
  rnn_persistent_##NAME##_g##G##_h##H##_publish(                               \
      float value, int row, int unit, int batch,                               \
      const unsigned long long *exchange) {                                    \
    Entry<D, O, G, H>::publish(value, row, unit, batch, exchange);             \
  }                                                                            \
  extern "C" __device__ __attribute__((always_inline)) void                    \
  rnn_persistent_##NAME##_g##G##_h##H##_release(                               \
      unsigned *counter, unsigned long long *exchange, int batch, int step) {  \
    Entry<D, O, G, H>::release(counter, exchange, batch, step);                \
  }

// (No TF32 backward: the header has no layout for it.)
#define RNN_PERSISTENT_GATES(G, H)                                             \
  RNN_PERSISTENT_ENTRY_POINTS(fwd, Direction::Forward, Operands::BF16, G, H)   \
  RNN_PERSISTENT_ENTRY_POINTS(bwd, Direction::Backward, Operands::BF16, G, H)  \
  RNN_PERSISTENT_ENTRY_POINTS(fwd_f16, Direction::Forward, Operands::F16, G,   \
                              H)                                               \
  RNN_PERSISTENT_ENTRY_POINTS(bwd_f16, Direction::Backward, Operands::F16, G,  \
                              H)                                               \
  RNN_PERSISTENT_ENTRY_POINTS(fwd_tf32, Direction::Forward, Operands::TF32, G, \
                              H)
// Every gate count from kMinGates to kMaxGates.
static_assert(kMinGates == 1 && kMaxGates == 4, "the gate counts below");
#define RNN_PERSISTENT_HIDDEN(H)                                               \
  RNN_PERSISTENT_GATES(1, H)                                                   \
  RNN_PERSISTENT_GATES(2, H)                                                   \
  RNN_PERSISTENT_GATES(3, H) RNN_PERSISTENT_GATES(4, H)
RNN_PERSISTENT_FOR_EACH_HIDDEN(RNN_PERSISTENT_HIDDEN)
