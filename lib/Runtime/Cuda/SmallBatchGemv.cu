//===- SmallBatchGemv.cu - Recurrent products of a few rows ---------------===//
//
// C[m, n] (+)= A[m, k] · W[n, k]ᵀ for m <= 8 rows (the batch of a
// small-latency step), in fp32 FMAs: a warp per output column holds its
// weight row in registers (float4 per lane and 128 values of K) and reduces
// each row's dot product with shuffles.
//
// The point is the launch, not the arithmetic: cuBLAS's kernels do not take
// part in programmatic dependent launch, so a step of cuBLAS GEMM plus our
// pointwise kernel paid a full launch gap per GEMM. This kernel waits for
// the grid ahead of it (griddepcontrol.wait) before it reads memory and then
// lets the next grid launch, so a step's two kernels overlap their launches
// (bench/experiments/dependent_gemv.cu: an LSTM step at B = 1, H = 256,
// 4.55 -> 3.00 µs).
//
//===----------------------------------------------------------------------===//

#include <cstdint>

namespace {

/// K up to 128 * kVectors.
template <int kVectors>
__device__ void gemv(const float *a, int64_t lda, const float *w, int64_t ldw,
                     float *c, int64_t ldc, int m, int n, int k,
                     int accumulate) {
  // Launched with programmatic stream serialization, this grid may start
  // while the one ahead of it (which writes A, and maybe C) still runs.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const int lane = threadIdx.x % 32;
  const int64_t col =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (col >= n)
    return;
  float4 weights[kVectors];
  const float *row = w + col * ldw;
#pragma unroll
  for (int j = 0; j < kVectors; ++j)
    weights[j] =
        128 * j + 4 * lane < k
            ? *reinterpret_cast<const float4 *>(row + 128 * j + 4 * lane)
            : make_float4(0, 0, 0, 0);
  for (int r = 0; r < m; ++r) {
    const float *input = a + r * lda;
    float sum = 0;
#pragma unroll
    for (int j = 0; j < kVectors; ++j) {
      if (128 * j + 4 * lane >= k)
        continue;
      float4 x = *reinterpret_cast<const float4 *>(input + 128 * j + 4 * lane);
      sum += x.x * weights[j].x + x.y * weights[j].y + x.z * weights[j].z +
             x.w * weights[j].w;
    }
#pragma unroll
    for (int offset = 16; offset; offset /= 2)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      float *out = c + r * ldc + col;
      *out = accumulate ? *out + sum : sum;
    }
  }
}

} // namespace

// Grid ceil(n / 8), 256 threads (a warp per column). A, W 16-byte aligned,
// lda and ldw multiples of 4, k a multiple of 4.
#define RNN_GEMV_KERNEL(K, VECTORS)                                            \
  extern "C" __global__ void __launch_bounds__(256) rnn_small_batch_gemv_k##K( \
      const float *a, int64_t lda, const float *w, int64_t ldw, float *c,      \
      int64_t ldc, int m, int n, int k, int accumulate) {                      \
    gemv<VECTORS>(a, lda, w, ldw, c, ldc, m, n, k, accumulate);                \
  }
RNN_GEMV_KERNEL(256, 2)
RNN_GEMV_KERNEL(512, 4)
RNN_GEMV_KERNEL(1024, 8)
RNN_GEMV_KERNEL(2048, 16)
