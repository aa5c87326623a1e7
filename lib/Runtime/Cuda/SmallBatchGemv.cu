//===- SmallBatchGemv.cu - Recurrent products of a few rows ---------------===//
//
// C[m, n] (+)= A[m, k] · W[n, k]ᵀ for m <= 8 rows (the batch of a
// small-latency step), A and W in f32, bf16 or f16, C in f32, products
// summed in f32 FMAs (no TF32 rounding): a warp per output column holds its
// weight row in registers (16 bytes per lane and 32 vectors of K) and reduces
// each row's dot product with shuffles.
//
// The point is the launch, not the arithmetic: cuBLAS's kernels do not take
// part in programmatic dependent launch, so a step of cuBLAS GEMM plus our
// pointwise kernel paid a full launch gap per GEMM. This kernel waits for
// the grid ahead of it (griddepcontrol.wait) before it reads memory and then
// lets the next grid launch, so a step's two kernels overlap their launches
// (docs/performance-notes.md: an LSTM step at B = 1, H = 256,
// 4.55 -> 3.00 µs).
//
//===----------------------------------------------------------------------===//

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace {

/// The 16 bytes at `p` as floats: 4 f32 or 8 bf16 / f16 values.
template <typename T> struct Vector;
template <> struct Vector<float> {
  static constexpr int kSize = 4;
  __device__ static void load(const float *p, float (&out)[4]) {
    float4 v = *reinterpret_cast<const float4 *>(p);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
  }
};
__device__ __forceinline__ float2 toFloat2(__nv_bfloat162 pair) {
  return __bfloat1622float2(pair);
}
__device__ __forceinline__ float2 toFloat2(__half2 pair) {
  return __half22float2(pair);
}
/// 8 16-bit values as 4 pairs.
template <typename Pair> struct PairVector {
  static constexpr int kSize = 8;
  template <typename T>
  __device__ static void load(const T *p, float (&out)[8]) {
    uint4 v = *reinterpret_cast<const uint4 *>(p);
    const Pair *pairs = reinterpret_cast<const Pair *>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 f = toFloat2(pairs[i]);
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  }
};
template <> struct Vector<__nv_bfloat16> : PairVector<__nv_bfloat162> {};
template <> struct Vector<__half> : PairVector<__half2> {};

/// K up to 32 * Vector<T>::kSize * kVectors.
template <typename T, int kVectors>
__device__ void gemv(const T *a, int64_t lda, const T *w, int64_t ldw, float *c,
                     int64_t ldc, int m, int n, int k, int accumulate) {
  constexpr int kSize = Vector<T>::kSize, kSpan = 32 * kSize;
  // Launched with programmatic stream serialization, this grid may start
  // while the one ahead of it (which writes A, and maybe C) still runs.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  // The next grid may be scheduled now: whatever it is, it waits for this
  // grid to complete before it reads memory (griddepcontrol.wait), and the
  // trigger counts only once every block of this grid has run it.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const int lane = threadIdx.x % 32;
  const int64_t col =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (col >= n)
    return;
  float weights[kVectors][kSize];
  const T *row = w + col * ldw;
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
    if (kSpan * j + kSize * lane < k) {
      Vector<T>::load(row + kSpan * j + kSize * lane, weights[j]);
    } else {
#pragma unroll
      for (int e = 0; e < kSize; ++e)
        weights[j][e] = 0;
    }
  }
  for (int r = 0; r < m; ++r) {
    const T *input = a + r * lda;
    float sum = 0;
#pragma unroll
    for (int j = 0; j < kVectors; ++j) {
      if (kSpan * j + kSize * lane >= k)
        continue;
      float x[kSize];
      Vector<T>::load(input + kSpan * j + kSize * lane, x);
#pragma unroll
      for (int e = 0; e < kSize; ++e)
        sum += x[e] * weights[j][e];
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

// Grid ceil(n / 8), 256 threads (a warp per column). A and W 16-byte
// aligned; lda, ldw and k multiples of 16 bytes' worth of elements.
#define RNN_GEMV_KERNEL(NAME, TYPE, K, VECTORS)                                \
  extern "C" __global__ void __launch_bounds__(256)                            \
      rnn_small_batch_gemv_##NAME##_k##K(                                      \
          const TYPE *a, int64_t lda, const TYPE *w, int64_t ldw, float *c,    \
          int64_t ldc, int m, int n, int k, int accumulate) {                  \
    gemv<TYPE, VECTORS>(a, lda, w, ldw, c, ldc, m, n, k, accumulate);          \
  }
RNN_GEMV_KERNEL(f32, float, 256, 2)
RNN_GEMV_KERNEL(f32, float, 512, 4)
RNN_GEMV_KERNEL(f32, float, 1024, 8)
RNN_GEMV_KERNEL(f32, float, 2048, 16)
RNN_GEMV_KERNEL(bf16, __nv_bfloat16, 256, 1)
RNN_GEMV_KERNEL(bf16, __nv_bfloat16, 512, 2)
RNN_GEMV_KERNEL(bf16, __nv_bfloat16, 1024, 4)
RNN_GEMV_KERNEL(bf16, __nv_bfloat16, 2048, 8)
RNN_GEMV_KERNEL(f16, __half, 256, 1)
RNN_GEMV_KERNEL(f16, __half, 512, 2)
RNN_GEMV_KERNEL(f16, __half, 1024, 4)
RNN_GEMV_KERNEL(f16, __half, 2048, 8)
