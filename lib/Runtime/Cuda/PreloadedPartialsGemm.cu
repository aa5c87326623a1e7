//===- PreloadedPartialsGemm.cu - K-split partials, weights loaded early --===//
//
// The K-split partials of a recurrent product of at most 64 rows (see
// rnn_cuda_gemm_partials): P_s = A[:, s·S ...] · W[:, s·S ...]ᵀ for the K
// slices s of width S, in TF32 tensor-core arithmetic with f32 sums.
//
// A step of a two-stage cell (MGU, GRU with the reset gate before the
// matmul) is GEMM, kernel, GEMM, kernel, each needing the one before. cuBLAS's
// kernels do not take part in programmatic dependent launch, so each
// kernel -> GEMM edge pays a full launch and the GEMM then streams its weights
// from L2 after the kernel ahead of it has ended. This GEMM is launched early
// and loads its block's weight tile into registers (rounded to TF32) before
// it waits for the grid ahead of it (griddepcontrol.wait): the weights are
// constant for the whole model call, so reading them early is safe, and only
// A's slice (the state the kernel ahead just wrote) is read after the wait.
// Measured (H100, docs/performance-notes.md): a GRU-reset-before step at
// B = 64, H = 1024 takes 13.4 µs with cuBLAS's partials and 12.2 with this
// kernel; loading the weights after the wait instead cost the experiment's
// first version of it 0.7 µs per step.
//
// Block: kGroups warp groups of 4 warps; warp w of group q owns the 16
// output columns n0 + 16w ... of the block's 64 and the 128 values of K
// k0 + 128q ... of the block's slice (S = 128 · kGroups), as the A operand of
// mma.m16n8k8 (rows = output columns), so a lane holds 64 weights. A's slice
// (B operand: columns = rows of A) is staged in shared memory with cp.async;
// groups after the first add their sums through shared memory. Inside each
// pair of k-steps lane t takes k = 4t ... 4t + 3, so that both operands are
// float4 loads; the sum does not depend on the order.
//
//===----------------------------------------------------------------------===//

#include <cstdint>

namespace {

constexpr int kRows = 64;        // The most rows of A (a batch) it takes.
constexpr int kGroupDepth = 128; // K per warp group.
constexpr int kPad = 16; // Row padding of staged A: a float4 phase of two
                         // rows then covers the 32 banks once.

__device__ __forceinline__ unsigned toTf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void mma(float (&d)[4], unsigned a0, unsigned a1,
                                    unsigned a2, unsigned a3, unsigned b0,
                                    unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int kGroups>
__device__ void preloadedPartials(const float *a, int64_t lda, const float *w,
                                  int64_t ldw, float *c, int64_t ldc, int m,
                                  int n) {
  constexpr int kSlice = kGroupDepth * kGroups, kStride = kSlice + kPad;
  // Blocks of 128 columns (8 warps, reading A's slice once for twice the
  // columns) made the GRU's [r; z] product at N = 2048 much slower
  // (17.2 against 12.2 µs per step, docs/performance-notes.md).
  constexpr int kColumns = 64, kThreads = 128 * kGroups;
  extern __shared__ float4 shared4[];
  float *staged = reinterpret_cast<float *>(shared4); // [kRows][kStride]
  const int tid = threadIdx.x, group = tid / 128, warp = tid % 128 / 32,
            lane = tid % 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * kColumns + 16 * warp;
  const int64_t k0 = static_cast<int64_t>(blockIdx.y) * kSlice;
  const int kGroup = kGroupDepth * group; // Within the slice.

  // The weights first: constant for the call, so they may be read while the
  // grid ahead of this one still runs. Columns past n read the last row
  // instead of branching: their sums are never stored.
  unsigned weights[kGroupDepth / 16][8];
  {
    const float *lo =
        w + static_cast<int64_t>(min(n0 + g, n - 1)) * ldw + k0 + kGroup;
    const float *hi =
        w + static_cast<int64_t>(min(n0 + g + 8, n - 1)) * ldw + k0 + kGroup;
#pragma unroll
    for (int p = 0; p < kGroupDepth / 16; ++p) {
      float4 vl = *reinterpret_cast<const float4 *>(lo + 16 * p + 4 * t);
      float4 vh = *reinterpret_cast<const float4 *>(hi + 16 * p + 4 * t);
      // Fragment registers a0..a3 of the pair's two k-steps.
      weights[p][0] = toTf32(vl.x);
      weights[p][1] = toTf32(vh.x);
      weights[p][2] = toTf32(vl.y);
      weights[p][3] = toTf32(vh.y);
      weights[p][4] = toTf32(vl.z);
      weights[p][5] = toTf32(vh.z);
      weights[p][6] = toTf32(vl.w);
      weights[p][7] = toTf32(vh.w);
    }
  }
  // Launched with programmatic stream serialization, this grid may run
  // while the one ahead of it (which writes A) still does.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  // The next grid may be scheduled now: it waits for this one to complete
  // before it reads memory, and the trigger counts once every block ran it.
  // Not before the wait (unlike our pointwise kernels): that made a GRU step
  // 12.1 -> 17.4 µs, and 17.8 with the trigger at the kernel's start
  // (preload_gemm.cu built with each).
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");

  // A's slice; rows past m repeat the last row (their sums are not stored).
  constexpr int kVectorsPerRow = kSlice / 4;
  for (int v = tid; v < kRows * kVectorsPerRow; v += kThreads) {
    int row = v / kVectorsPerRow, col = 4 * (v % kVectorsPerRow);
    const float *src =
        a + static_cast<int64_t>(min(row, m - 1)) * lda + k0 + col;
    unsigned address = static_cast<unsigned>(
        __cvta_generic_to_shared(staged + row * kStride + col));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address),
                 "l"(src));
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();

  // acc[j]: rows 8j + 2t and 8j + 2t + 1 of columns n0 + g and n0 + g + 8.
  // Every row tile is multiplied, those past m on the rows staged for them:
  // skipping them (a tile count from m, a branch in the loop) made a GRU
  // step 40% slower (docs/performance-notes.md).
  float acc[kRows / 8][4] = {};
#pragma unroll
  for (int p = 0; p < kGroupDepth / 16; ++p) {
#pragma unroll
    for (int j = 0; j < kRows / 8; ++j) {
      float4 x = *reinterpret_cast<const float4 *>(
          staged + (8 * j + g) * kStride + kGroup + 16 * p + 4 * t);
      mma(acc[j], weights[p][0], weights[p][1], weights[p][2], weights[p][3],
          toTf32(x.x), toTf32(x.y));
      mma(acc[j], weights[p][4], weights[p][5], weights[p][6], weights[p][7],
          toTf32(x.z), toTf32(x.w));
    }
  }

  if constexpr (kGroups > 1) {
    // Groups 1.. hand their sums to group 0 through the staging buffer. Rows
    // of kColumns + 4: lane (g, t) writes row 2t + ..., column g + ..., and
    // with 64 the four values of t would fall on one bank.
    constexpr int kSumsStride = kColumns + 4;
    float *sums = staged; // [kGroups - 1][kRows][kSumsStride]
    static_assert((kGroups - 1) * kRows * kSumsStride <= kRows * kStride,
                  "the sums fit in the staging buffer");
    __syncthreads();
    if (group > 0) {
      float *mine = sums + (group - 1) * kRows * kSumsStride;
#pragma unroll
      for (int j = 0; j < kRows / 8; ++j) {
        int row = 8 * j + 2 * t, col = 16 * warp + g;
        mine[row * kSumsStride + col] = acc[j][0];
        mine[(row + 1) * kSumsStride + col] = acc[j][1];
        mine[row * kSumsStride + col + 8] = acc[j][2];
        mine[(row + 1) * kSumsStride + col + 8] = acc[j][3];
      }
    }
    __syncthreads();
    if (group > 0)
      return;
    for (int other = 0; other < kGroups - 1; ++other) {
      const float *theirs = sums + other * kRows * kSumsStride;
#pragma unroll
      for (int j = 0; j < kRows / 8; ++j) {
        int row = 8 * j + 2 * t, col = 16 * warp + g;
        acc[j][0] += theirs[row * kSumsStride + col];
        acc[j][1] += theirs[(row + 1) * kSumsStride + col];
        acc[j][2] += theirs[row * kSumsStride + col + 8];
        acc[j][3] += theirs[(row + 1) * kSumsStride + col + 8];
      }
    }
  }

  float *out = c + static_cast<int64_t>(blockIdx.y) * m * ldc;
  const int colLo = n0 + g, colHi = n0 + g + 8;
#pragma unroll
  for (int j = 0; j < kRows / 8; ++j) {
    int row = 8 * j + 2 * t;
    float values[4] = {acc[j][0], acc[j][1], acc[j][2], acc[j][3]};
    int rows[4] = {row, row + 1, row, row + 1};
    int cols[4] = {colLo, colLo, colHi, colHi};
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (rows[e] < m && cols[e] < n)
        out[static_cast<int64_t>(rows[e]) * ldc + cols[e]] = values[e];
  }
}

} // namespace

// Grid (ceil(n / 64), slices), 128 · G threads, dynamic shared memory
// 64 · (128 · G + 16) · 4 bytes; the K slice is 128 · G. A and W 16-byte
// aligned, lda and ldw multiples of 4, m <= 64.
#define RNN_PRELOADED_PARTIALS_KERNEL(GROUPS, SLICE)                           \
  extern "C" __global__ void __launch_bounds__(128 * GROUPS)                   \
      rnn_preloaded_partials_gemm_slice##SLICE(                                \
          const float *a, int64_t lda, const float *w, int64_t ldw, float *c,  \
          int64_t ldc, int m, int n) {                                         \
    preloadedPartials<GROUPS>(a, lda, w, ldw, c, ldc, m, n);                   \
  }
RNN_PRELOADED_PARTIALS_KERNEL(1, 128)
RNN_PRELOADED_PARTIALS_KERNEL(2, 256)
RNN_PRELOADED_PARTIALS_KERNEL(4, 512)
