//===- PreloadedPartialsGemm.h - Partials, weights first --------*- C++ -*-===//
//
// The K-split partials of recurrent products of at most 64 rows run on our
// own kernel (PreloadedPartialsGemm.cu): launched early, it loads its
// constant weights before it waits for the kernel ahead of it.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_PRELOADEDPARTIALSGEMM_H
#define RNN_LIB_RUNTIME_CUDA_PRELOADEDPARTIALSGEMM_H

#include <cuda.h>

#include <cstdint>

namespace rnn::cuda {

/// The most rows (batch) the kernel takes.
constexpr int64_t kPreloadedMaxRows = 64;

/// For s < slices, C + s·m·ldc = A[:, s·k/slices ...] · B[:, s·k/slices ...]ᵀ
/// with f32 A, B (n x k) and C, in TF32 arithmetic with f32 sums. B must not
/// change while the call runs (it is read before the grid ahead has ended).
/// `dependentLaunch` launches it with programmatic stream serialization.
/// Returns false, having done nothing, where cuBLAS is to run it: m over
/// kPreloadedMaxRows, a slice (k / slices) other than 128, 256 or 512, more
/// than 65535 slices, A or B not 16-byte aligned, lda or ldb under k or not
/// a multiple of 4, n over 2^30, ldc under n, or no usable kernels (before
/// sm_90). Returns true when it
/// issued the GEMM or recorded why it could not (CudaErrors.h).
bool tryPreloadedPartialsGemm(int64_t slices, int64_t m, int64_t n, int64_t k,
                              CUdeviceptr a, int64_t lda, CUdeviceptr b,
                              int64_t ldb, CUdeviceptr c, int64_t ldc,
                              bool dependentLaunch, CUstream stream);

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_PRELOADEDPARTIALSGEMM_H
