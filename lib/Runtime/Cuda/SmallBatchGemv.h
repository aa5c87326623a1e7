//===- SmallBatchGemv.h - Recurrent products of a few rows ------*- C++ -*-===//
//
// GEMMs of at most 8 rows run on our own kernel (SmallBatchGemv.cu),
// which takes part in programmatic dependent launch as cuBLAS's kernels do
// not: a small-latency step's GEMM and pointwise kernel then overlap their
// launches.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_SMALLBATCHGEMV_H
#define RNN_LIB_RUNTIME_CUDA_SMALLBATCHGEMV_H

#include <cuda.h>

#include <cstdint>

namespace rnn::cuda {

/// The most rows the kernel takes; its cost grows with each.
constexpr int64_t kGemvMaxRows = 8;
/// The most elements of A (rows x K) the kernel takes. A warp runs its
/// column's dot products row after row, so past this cuBLAS's GEMM was
/// faster whatever the launch saved: in the models' steps, 3 x 1280 f32
/// 1.73 against 1.22 ms, 4 x 1536 f32 1.35 against 0.85, 8 x 2048 bf16
/// 0.35 against 0.18, 8 x 768 f32 2.6-2.9 against 2.5-2.7; 1 x 1000, 2 x
/// 1024 and 4 x 640 (f32) were 1.4x to 1.6x faster on the GEMV (H200 and
/// H100, 2026-11-27, docs/performance-notes.md).
constexpr int64_t kGemvMaxElements = 3072;

/// C[m, n] (+)= A[m, k] · B[n, k]ᵀ with A and B of `dtype` (rnn_dtype:
/// RNN_F32, RNN_BF16 or RNN_F16), C in f32, products summed in f32 FMAs (for
/// f32 operands no TF32 rounding, so at least as accurate as the TF32 the
/// caller may allow). `dependentLaunch` launches it with programmatic stream
/// serialization (the kernel waits for the grid ahead of it before it reads
/// memory). Returns false, having done nothing, where cuBLAS is to run it:
/// another dtype, more than kGemvMaxRows rows, K over kGemvMaxK, rows x K
/// over kGemvMaxElements, A or B not
/// 16-byte aligned, K, lda or ldb not a multiple of 16 bytes' worth of
/// elements, n over 2^30, or no usable kernels (before sm_90). Returns true
/// when it issued the GEMV or recorded why it could not (CudaErrors.h).
bool trySmallBatchGemv(int32_t dtype, int64_t m, int64_t n, int64_t k,
                       CUdeviceptr a, int64_t lda, CUdeviceptr b, int64_t ldb,
                       CUdeviceptr c, int64_t ldc, bool accumulate,
                       bool dependentLaunch, CUstream stream);

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_SMALLBATCHGEMV_H
