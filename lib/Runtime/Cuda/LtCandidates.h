//===- LtCandidates.h - GEMMs on a chosen cuBLASLt algorithm ----*- C++ -*-===//
//
// cuBLAS picks one algorithm per GEMM by heuristic; for the per-step products
// of a recurrence its pick is not always the fastest in the step (the MGU's
// K-split partials: 12.3 against 11.4 µs per step for the heuristic's second
// candidate, docs/performance-notes.md). The runtime can run such
// a GEMM on the k-th candidate of cuBLASLt's heuristic instead, and the graph
// tuning (GraphTuning.cpp) times the call with each.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_LTCANDIDATES_H
#define RNN_LIB_RUNTIME_CUDA_LTCANDIDATES_H

#include <cublasLt.h>

#include <cstdint>

namespace rnn::cuda {

/// One GEMM, strided-batched when `batch` > 1, in cuBLAS's column-major
/// terms: C[rows, cols] = alpha · op(A)[rows, depth] · B[depth, cols] +
/// beta · C.
struct LtGemm {
  cudaDataType abType, cType;
  cublasComputeType_t compute;
  cublasOperation_t transA;
  int64_t rows, cols, depth;
  const void *a;
  int64_t lda, strideA;
  const void *b;
  int64_t ldb, strideB;
  void *c;
  int64_t ldc, strideC;
  int32_t batch;
  const void *alpha, *beta;
  /// The second operand's op; cuBLASLt candidates run only CUBLAS_OP_N.
  cublasOperation_t transB = CUBLAS_OP_N;
};

/// How many candidates the tuning tries (cuBLASLt's heuristic lists them
/// best first).
constexpr int kLtCandidates = 4;

/// Runs `gemm` on `stream` with the `candidate`-th algorithm that cuBLASLt's
/// heuristic lists for it (given the workspace), with the workspace.
/// CUBLAS_STATUS_NOT_SUPPORTED, having done nothing, where the heuristic
/// lists fewer.
cublasStatus_t runLtCandidate(const LtGemm &gemm, int candidate,
                              void *workspace, size_t workspaceBytes,
                              cudaStream_t stream);

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_LTCANDIDATES_H
