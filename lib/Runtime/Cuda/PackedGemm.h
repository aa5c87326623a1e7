//===- PackedGemm.h - Recurrent GEMMs on weights packed per call -*- C++
//-*-===//
//
// The fp32 GEMMs whose weights do not fit in L2 and which allow TF32 run on
// our own kernel (PackedTf32Gemm.cu) with the weights packed in 20 bits,
// once per model call: a step then streams 5/8 of the bytes cuBLAS would.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_PACKEDGEMM_H
#define RNN_LIB_RUNTIME_CUDA_PACKEDGEMM_H

#include <cuda.h>

#include <cstdint>

namespace rnn::cuda {

/// Brackets a model call on the calling thread: packed weights live from
/// their first use in the call to its end, when they are freed in stream
/// order (inside a graph capture, the frees are captured too).
/// `enabled` false keeps the call on cuBLAS (RNN_CUDA_PACKED_GEMM=0).
void beginPackedWeightsCall(bool enabled);
void endPackedWeightsCall(CUstream stream);

/// C[m, n] (+)= A[m, k] · B[n, k]ᵀ (or · B[k, n] with `bIsKN`) with TF32,
/// f32 operands and result, for a B that stays unchanged during the call
/// (the compiler's RNN_GEMM_B_CONSTANT); with `slices` > 1, the partial
/// products of that many K slices instead, slice s at c + s * m * ldc
/// (rnn_cuda_gemm_partials; no accumulation). Returns false, having done
/// nothing, where cuBLAS is to run it: outside a model call, before sm_90,
/// for weights under 90% of L2 (75% for B stored k x n), more than 32 rows,
/// sizes the kernel does not tile in one wave of blocks, or A not 16-byte
/// aligned. Returns true when it issued the GEMM or recorded why it could
/// not (CudaErrors.h).
bool tryPackedGemm(int64_t m, int64_t n, int64_t k, CUdeviceptr a, int64_t lda,
                   CUdeviceptr b, int64_t ldb, bool bIsKN, CUdeviceptr c,
                   int64_t ldc, bool accumulate, int64_t slices,
                   CUstream stream);

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_PACKEDGEMM_H
