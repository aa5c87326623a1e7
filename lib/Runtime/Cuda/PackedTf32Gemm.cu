//===- PackedTf32Gemm.cu - Recurrent GEMM on weights packed in 20 bits ----===//
//
// C[M, N] (+)= A[M, K] · W[N, K]ᵀ for few rows (M <= 32: the batch of a
// recurrent step) and weights too large for L2, with TF32 tensor cores.
// Such a GEMM streams all of W from memory at every step; TF32 uses 19 bits
// of each weight (sign, exponent, 10 mantissa bits), so the weights are
// rounded to TF32 once per model call and stored in 20 bits: the product is
// the TF32 product, and a step reads 5/8 of the bytes.
//
// Packing: the lane (g, t) = (lane / 4, lane % 4) of the warp that
// multiplies n-tile nt (8 rows of W) needs W[8 nt + g][k + t] and
// W[8 nt + g][k + t + 4] for the k-step at k (mma.m16n8k8, B operand). A
// "quad" is 4 k-steps (32 values of K): 8 values per lane, element
// i = 2 s + j being W[8 nt + g][32 q + 8 s + t + 4 j]. Per (nt, q, lane) the
// packed weights hold a uint4 of the 8 upper halves (sign, exponent and 7
// mantissa bits) and a uint32 of the 8 next nibbles (3 mantissa bits and a
// zero), both in [nt][q][lane] order, so a warp's loads are contiguous.
//
// The GEMM: a block owns 128 columns (16 n-tiles) and 1/S of K (S, the
// grid's y extent: enough blocks to fill the GPU). Either the S blocks of a
// column range (2, 4 or 8) form a cluster and add their partial products
// through distributed shared memory (deterministic, no atomics), or each
// writes its own partial product as one K slice of the caller's partials
// (rnn_cuda_gemm_partials, S slices). A's rows for the block's part of K
// are staged in shared memory once. Each of the 16 warps takes 4 n-tiles
// (so that every A fragment read from shared memory feeds 4 products: those
// reads, not the weights, limited a warp per n-tile) and a quarter of the
// block's K range, and streams its weights through a ring of shared-memory
// slots filled by cp.async, in which each lane copies, and later reads, only
// its own bytes.
// Measured against cuBLAS: docs/performance-notes.md.
//
//===----------------------------------------------------------------------===//

#include <cooperative_groups.h>
#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kTilesPerWarp = 4, kWarpsPerK = 4, kStages = 2;
constexpr int kCols = 128, kGroups = kCols / 8 / kTilesPerWarp;
constexpr int kWarps = kGroups * kWarpsPerK;

__device__ __forceinline__ uint32_t tf32Bits(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ uint32_t sharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4],
                                    uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// The 8 weights of a lane's quad, as TF32 bit patterns.
__device__ __forceinline__ void unpack(uint4 upper, uint32_t nibbles,
                                       uint32_t (&v)[8]) {
  uint32_t words[4] = {upper.x, upper.y, upper.z, upper.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = (words[i] << 16) | (((nibbles >> (8 * i)) & 0xf) << 12);
    v[2 * i + 1] =
        (words[i] & 0xffff0000u) | (((nibbles >> (8 * i + 4)) & 0xf) << 12);
  }
}

/// Rows of A past M read as zero; MT m-tiles of 16 rows; gridDim.y K parts
/// (K a multiple of 32 * kWarpsPerK * gridDim.y). `partialStride` 0 adds the
/// parts in the cluster, else part r is written at c + r * partialStride.
template <int MT>
__device__ void gemm(const float *a, int64_t lda, const uint4 *upper,
                     const uint32_t *lower, float *c, int64_t ldc, int m, int k,
                     int accumulate, int64_t partialStride) {
  constexpr int kRows = MT * 16;
  extern __shared__ float4 shared4[];
  float *shared = reinterpret_cast<float *>(shared4);
  const int split = gridDim.y;
  const int kRange = k / split, rank = blockIdx.y, k0 = rank * kRange;
  const int stride = kRange + 4; // Conflict-free A fragment reads.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int group = warp % kGroups, kGroup = warp / kGroups;
  const int quadsPerRow = k / 32, quads = kRange / 32 / kWarpsPerK;
  const int firstQuad = k0 / 32 + kGroup * quads;
  const int64_t firstTile =
      static_cast<int64_t>(blockIdx.x) * (kCols / 8) + group * kTilesPerWarp;
  constexpr int kSlot = kTilesPerWarp * 32; // Ring entries per stage.
  uint4 *ringUpper = reinterpret_cast<uint4 *>(shared + kRows * stride) +
                     warp * kStages * kSlot;
  uint32_t *ringLower = reinterpret_cast<uint32_t *>(
                            reinterpret_cast<uint4 *>(shared + kRows * stride) +
                            kWarps * kStages * kSlot) +
                        warp * kStages * kSlot;

  auto issue = [&](int q) {
    if (q < quads) {
      int slot = q % kStages;
#pragma unroll
      for (int n = 0; n < kTilesPerWarp; ++n) {
        int64_t index =
            ((firstTile + n) * quadsPerRow + firstQuad + q) * 32 + lane;
        int entry = slot * kSlot + n * 32 + lane;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                         sharedAddress(ringUpper + entry)),
                     "l"(upper + index));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(
                         sharedAddress(ringLower + entry)),
                     "l"(lower + index));
      }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
  // The weight stream starts before A is staged.
  for (int q = 0; q < kStages - 1; ++q)
    issue(q);
  for (int i = threadIdx.x; i < kRows * (kRange / 4); i += kWarps * 32) {
    int row = i / (kRange / 4), col = (i % (kRange / 4)) * 4;
    const float *source =
        a + static_cast<int64_t>(row < m ? row : 0) * lda + k0 + col;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                     sharedAddress(shared + row * stride + col)),
                 "l"(source), "r"(row < m ? 16 : 0));
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();

  float acc[kTilesPerWarp][MT][4] = {};
  for (int q = 0; q < quads; ++q) {
    issue(q + kStages - 1);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 1) : "memory");
    int slot = q % kStages;
    uint32_t b[kTilesPerWarp][8];
#pragma unroll
    for (int n = 0; n < kTilesPerWarp; ++n)
      unpack(ringUpper[slot * kSlot + n * 32 + lane],
             ringLower[slot * kSlot + n * 32 + lane], b[n]);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      int kk = (kGroup * quads + q) * 32 + 8 * s;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        // The tensor cores read the fp32 bits of A as TF32.
        const float *rows = shared + mt * 16 * stride + kk;
        uint32_t fragment[4] = {
            __float_as_uint(rows[g * stride + t]),
            __float_as_uint(rows[(g + 8) * stride + t]),
            __float_as_uint(rows[g * stride + t + 4]),
            __float_as_uint(rows[(g + 8) * stride + t + 4])};
#pragma unroll
        for (int n = 0; n < kTilesPerWarp; ++n)
          mma(acc[n][mt], fragment, b[n][2 * s], b[n][2 * s + 1]);
      }
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();

  // Partial tiles [kWarpsPerK][kRows][kCols] replace A in shared memory.
  float *partial = shared + kGroup * kRows * kCols;
#pragma unroll
  for (int n = 0; n < kTilesPerWarp; ++n)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      int col = (group * kTilesPerWarp + n) * 8 + 2 * t, row = mt * 16 + g;
      partial[row * kCols + col] = acc[n][mt][0];
      partial[row * kCols + col + 1] = acc[n][mt][1];
      partial[(row + 8) * kCols + col] = acc[n][mt][2];
      partial[(row + 8) * kCols + col + 1] = acc[n][mt][3];
    }
  const int64_t column0 = static_cast<int64_t>(blockIdx.x) * kCols;
  if (partialStride) {
    // This block's K part is one slice of the caller's partials.
    __syncthreads();
    float *out = c + rank * partialStride + column0;
    for (int i = threadIdx.x; i < kRows * kCols; i += kWarps * 32) {
      int row = i / kCols, col = i % kCols;
      if (row >= m)
        break;
      float sum = 0;
#pragma unroll
      for (int kg = 0; kg < kWarpsPerK; ++kg)
        sum += shared[(kg * kRows + row) * kCols + col];
      out[row * ldc + col] = sum;
    }
    return;
  }
  // Rank r of the cluster adds up rows r, r + split, ... over the cluster's
  // ranks and K groups, in a fixed order.
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  for (int i = threadIdx.x; i < kRows / split * kCols; i += kWarps * 32) {
    int row = (i / kCols) * split + rank, col = i % kCols;
    if (row >= m)
      continue;
    float sum = 0;
    for (int r = 0; r < split; ++r) {
      const float *remote = cluster.map_shared_rank(shared, r);
#pragma unroll
      for (int kg = 0; kg < kWarpsPerK; ++kg)
        sum += remote[(kg * kRows + row) * kCols + col];
    }
    float *out = c + row * ldc + column0 + col;
    *out = accumulate ? *out + sum : sum;
  }
  // Other blocks of the cluster may still read this block's partial tiles.
  cluster.sync();
}

} // namespace

/// W [n, k] with row stride ldw (or, with `kn` set, W stored as its
/// transpose [k, n]) -> the packed layout above; one thread per (n-tile,
/// quad, lane).
extern "C" __global__ void rnn_pack_tf32_weights(const float *w, int64_t ldw,
                                                 int n, int k, int kn,
                                                 uint4 *upper,
                                                 uint32_t *lower) {
  int64_t index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  int64_t quadsPerRow = k / 32;
  if (index >= static_cast<int64_t>(n / 8) * quadsPerRow * 32)
    return;
  int lane = index % 32, g = lane / 4, t = lane % 4;
  int64_t tileQuad = index / 32;
  int64_t q = tileQuad % quadsPerRow, tile = tileQuad / quadsPerRow;
  int64_t row = 8 * tile + g, column = 32 * q + t;
  uint32_t halves[8], nibbles = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    int64_t kk = column + 8 * (i / 2) + 4 * (i % 2);
    uint32_t bits = tf32Bits(kn ? w[kk * ldw + row] : w[row * ldw + kk]);
    halves[i] = bits >> 16;
    nibbles |= ((bits >> 12) & 0xf) << (4 * i);
  }
  upper[index] =
      make_uint4(halves[0] | halves[1] << 16, halves[2] | halves[3] << 16,
                 halves[4] | halves[5] << 16, halves[6] | halves[7] << 16);
  lower[index] = nibbles;
}

/// Grid (n / 128, S), 512 threads, dynamic shared memory as PackedGemm.cpp
/// computes it; in clusters of (1, S), S = 2, 4 or 8, unless `partialStride`
/// is set.
extern "C" __global__ void __launch_bounds__(kWarps * 32)
    rnn_packed_tf32_gemm_m16(const float *a, int64_t lda, const uint4 *upper,
                             const uint32_t *lower, float *c, int64_t ldc,
                             int m, int k, int accumulate,
                             int64_t partialStride) {
  gemm<1>(a, lda, upper, lower, c, ldc, m, k, accumulate, partialStride);
}

extern "C" __global__ void __launch_bounds__(kWarps * 32)
    rnn_packed_tf32_gemm_m32(const float *a, int64_t lda, const uint4 *upper,
                             const uint32_t *lower, float *c, int64_t ldc,
                             int m, int k, int accumulate,
                             int64_t partialStride) {
  gemm<2>(a, lda, upper, lower, c, ldc, m, k, accumulate, partialStride);
}
