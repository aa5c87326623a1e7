//===- SmallBatchGemv.h - Recurrent products of a few rows ------*- C++ -*-===//
//
// fp32 GEMMs of at most 8 rows run on our own kernel (SmallBatchGemv.cu),
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

/// C[m, n] (+)= A[m, k] · B[n, k]ᵀ with f32 operands, product and result
/// (exact fp32: at least as accurate as the TF32 the caller may allow).
/// `dependentLaunch` launches it with programmatic stream serialization (the
/// kernel waits for the grid ahead of it before it reads memory). Returns
/// false, having done nothing, where cuBLAS is to run it: before sm_90, more
/// than kGemvMaxRows rows, K over 2048 or not a multiple of 4, A or B not
/// 16-byte aligned or with strides that are not multiples of 4. Returns true
/// when it issued the GEMV or recorded why it could not (CudaErrors.h).
bool trySmallBatchGemv(int64_t m, int64_t n, int64_t k, CUdeviceptr a,
                       int64_t lda, CUdeviceptr b, int64_t ldb, CUdeviceptr c,
                       int64_t ldc, bool accumulate, bool dependentLaunch,
                       CUstream stream);

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_SMALLBATCHGEMV_H
