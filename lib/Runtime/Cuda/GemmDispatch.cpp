//===- GemmDispatch.cpp - Where the GEMMs of a model call run -------------===//
//
// rnn_cuda_gemm, rnn_cuda_gemm_partials and rnn_cuda_gemm_batched (the
// head-wise products) run a product on the runtime's
// own kernels where one applies (PackedGemm.h, SmallBatchGemv.h,
// PreloadedPartialsGemm.h), else on cuBLAS with the thread's handle and the
// call's workspace, or, for a per-step GEMM in a tuned graph, on a cuBLASLt
// candidate (LtCandidates.h).
//
//===----------------------------------------------------------------------===//

#include "rnn/Runtime/rnn_cuda_runtime.h"
#include "rnn/Runtime/rnn_runtime.h"

#include "CallState.h"
#include "CudaErrors.h"
#include "LtCandidates.h"
#include "PackedGemm.h"
#include "PreloadedPartialsGemm.h"
#include "SmallBatchGemv.h"

#include <cublas_v2.h>

#include <climits>
#include <string>

using namespace rnn::cuda;

namespace {

cudaDataType cublasType(int32_t dtype) {
  switch (dtype) {
  case 0:
    return CUDA_R_32F;
  case 1:
    return CUDA_R_64F;
  case 2:
    return CUDA_R_16BF;
  default:
    return CUDA_R_16F;
  }
}

/// One handle per thread, created on first use (cuBLAS handles are not
/// thread-safe; streams are set per call).
cublasHandle_t threadHandle() {
  struct Handle {
    cublasHandle_t handle = nullptr;
    ~Handle() {
      if (handle)
        cublasDestroy(handle);
    }
  };
  thread_local Handle holder;
  if (!holder.handle && cublasCreate(&holder.handle) != CUBLAS_STATUS_SUCCESS)
    holder.handle = nullptr;
  return holder.handle;
}

/// The thread's handle on the current stream with the call's workspace, or
/// null (recorded), for a GEMM of these dtypes; the next launch learns
/// whether it follows a GEMM that cuBLAS ran with bf16/f16 data.
cublasHandle_t cublasForNextGemm(int32_t abDtype, int32_t cDtype) {
  afterReducedPrecisionCublas = abDtype == RNN_BF16 || abDtype == RNN_F16 ||
                                cDtype == RNN_BF16 || cDtype == RNN_F16;
  orderedSinceFence = true; // cuBLAS's kernels launch in stream order.
  cublasHandle_t handle = threadHandle();
  if (!handle) {
    record("cublasCreate failed");
    return nullptr;
  }
  if (!capturingThisThread)
    cublasWarmThisThread = true;
  // Setting the stream resets the handle's workspace to cuBLAS's own.
  cublasSetStream(handle, currentStream);
  if (callWorkspace)
    cublasSetWorkspace(handle, reinterpret_cast<void *>(callWorkspace),
                       workspaceBytesThisCall);
  return handle;
}

/// cuBLAS's compute type and scalars (alpha = 1, beta = 0 or 1) for
/// operands of `abDtype`: f64 computes in f64, f32 in TF32 where allowed.
struct CublasScalars {
  CublasScalars(int32_t abDtype, bool tf32, bool accumulate)
      : f64(abDtype == RNN_F64),
        compute(f64 ? CUBLAS_COMPUTE_64F
                    : (tf32 && abDtype == RNN_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                  : CUBLAS_COMPUTE_32F)),
        beta64(accumulate ? 1.0 : 0.0), beta32(accumulate ? 1.0f : 0.0f) {}
  const void *alpha() const {
    return f64 ? static_cast<const void *>(&alpha64)
               : static_cast<const void *>(&alpha32);
  }
  const void *beta() const {
    return f64 ? static_cast<const void *>(&beta64)
               : static_cast<const void *>(&beta32);
  }
  bool f64;
  cublasComputeType_t compute;
  double alpha64 = 1.0, beta64;
  float alpha32 = 1.0f, beta32;
};

/// Issues `gemm` with the call's handle: a per-step product on the call's
/// cuBLASLt candidate (with the call's workspace) where its problem has one,
/// otherwise on cuBLAS's own pick (strided-batched for a batch). A failure
/// is recorded with the product's shape in the entry point's terms.
void issueGemm(cublasHandle_t handle, const rnn::cuda::LtGemm &gemm,
               bool perStep) {
  auto shape = [&] {
    return " (m=" + std::to_string(gemm.cols) +
           ", n=" + std::to_string(gemm.rows) +
           ", k=" + std::to_string(gemm.depth * gemm.batch) +
           (gemm.batch > 1 ? ", batch=" + std::to_string(gemm.batch) : "") +
           ")";
  };
  if (perStep && gemmCandidateThisCall >= 0 &&
      gemm.compute != CUBLAS_COMPUTE_64F && gemm.transB == CUBLAS_OP_N) {
    cublasStatus_t status = rnn::cuda::runLtCandidate(
        gemm, gemmCandidateThisCall, reinterpret_cast<void *>(callWorkspace),
        callWorkspace ? workspaceBytesThisCall : 0, currentStream);
    if (status == CUBLAS_STATUS_SUCCESS) {
      ++ltGemmsIssued;
      return;
    }
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) {
      record(std::string("cublasLtMatmul failed: ") +
                 cublasGetStatusString(status) + shape() + ", candidate " +
                 std::to_string(gemmCandidateThisCall),
             status == CUBLAS_STATUS_ALLOC_FAILED);
      return;
    }
  }
  cublasStatus_t status =
      gemm.batch > 1
          ? cublasGemmStridedBatchedEx(
                handle, gemm.transA, gemm.transB, gemm.rows, gemm.cols,
                gemm.depth, gemm.alpha, gemm.a, gemm.abType, gemm.lda,
                gemm.strideA, gemm.b, gemm.abType, gemm.ldb, gemm.strideB,
                gemm.beta, gemm.c, gemm.cType, gemm.ldc, gemm.strideC,
                gemm.batch, gemm.compute, CUBLAS_GEMM_DEFAULT)
          : cublasGemmEx(handle, gemm.transA, gemm.transB, gemm.rows, gemm.cols,
                         gemm.depth, gemm.alpha, gemm.a, gemm.abType, gemm.lda,
                         gemm.b, gemm.abType, gemm.ldb, gemm.beta, gemm.c,
                         gemm.cType, gemm.ldc, gemm.compute,
                         CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    record(std::string(gemm.batch > 1 ? "cublasGemmStridedBatchedEx"
                                      : "cublasGemmEx") +
               " failed: " + cublasGetStatusString(status) + shape(),
           status == CUBLAS_STATUS_ALLOC_FAILED);
}

/// Whether the packed TF32 kernel (PackedGemm.h) may take a product: f32
/// operands and result with TF32 allowed, and a weight that stays unchanged
/// (it is packed once per call) read at every step of a loop (packing pays
/// for itself only over the steps).
bool packedCandidate(int32_t abDtype, int32_t cDtype, int32_t flags) {
  return (flags & 2) != 0 && (flags & RNN_GEMM_B_CONSTANT) != 0 &&
         (flags & RNN_GEMM_PER_STEP) != 0 && abDtype == RNN_F32 &&
         cDtype == RNN_F32;
}
} // namespace

RNN_EXPORT void rnn_cuda_gemm(int32_t abDtype, int32_t cDtype, int32_t flags,
                              int64_t m, int64_t n, int64_t k, int64_t a,
                              int64_t lda, int64_t b, int64_t ldb, int64_t c,
                              int64_t ldc) {
  // Whether this GEMM may launch early (our GEMV does) right after the work
  // ahead of it; then the flag describes this GEMM.
  bool overlap = overlapThisCall && !afterReducedPrecisionCublas;
  afterReducedPrecisionCublas = false;
  if (m == 0 || n == 0 || callFailed())
    return;
  // Row-major C = A·op(B) is column-major Cᵀ = op(B)ᵀ·Aᵀ: swap the operands
  // and read each row-major buffer as its column-major transpose.
  bool bIsNK = (flags & 1) == 0;
  bool tf32 = (flags & 2) != 0;
  bool accumulate = (flags & 4) != 0;
  if (packedCandidate(abDtype, cDtype, flags) &&
      rnn::cuda::tryPackedGemm(m, n, k, a, lda, b, ldb, !bIsNK, c, ldc,
                               accumulate, /*slices=*/1, currentStream)) {
    orderedSinceFence = true; // Launched in stream order.
    return;
  }
  // The GEMV reads its weights before it waits (orderedSinceFence).
  bool early = overlap && orderedSinceFence;
  if (gemvThisCall && bIsNK && cDtype == RNN_F32 &&
      rnn::cuda::trySmallBatchGemv(abDtype, m, n, k, a, lda, b, ldb, c, ldc,
                                   accumulate, early, currentStream)) {
    orderedSinceFence = orderedSinceFence || !early;
    return;
  }
  cublasHandle_t handle = cublasForNextGemm(abDtype, cDtype);
  if (!handle)
    return;
  CublasScalars scalars(abDtype, tf32, accumulate);
  rnn::cuda::LtGemm gemm = {cublasType(abDtype),
                            cublasType(cDtype),
                            scalars.compute,
                            bIsNK ? CUBLAS_OP_T : CUBLAS_OP_N,
                            n,
                            m,
                            k,
                            reinterpret_cast<const void *>(b),
                            ldb,
                            0,
                            reinterpret_cast<const void *>(a),
                            lda,
                            0,
                            reinterpret_cast<void *>(c),
                            ldc,
                            0,
                            1,
                            scalars.alpha(),
                            scalars.beta()};
  issueGemm(handle, gemm, (flags & RNN_GEMM_PER_STEP) != 0);
}

RNN_EXPORT void rnn_cuda_gemm_partials(int32_t abDtype, int32_t cDtype,
                                       int32_t flags, int64_t slices, int64_t m,
                                       int64_t n, int64_t k, int64_t a,
                                       int64_t lda, int64_t b, int64_t ldb,
                                       int64_t c, int64_t ldc) {
  // Partial s = A[:, s·k/S ..] · B[:, s·k/S ..]ᵀ (or · B[s·k/S .., :] for a
  // k x n B) into C + s·m·ldc, summed by
  // the kernel that reads them (convert-matmul-to-library-gemm{k-partials}):
  // our packed GEMM for weights too large for L2, our preloaded GEMM, else
  // one strided-batched GEMM over the K slices.
  bool overlap = overlapThisCall && !afterReducedPrecisionCublas;
  afterReducedPrecisionCublas = false;
  if (m == 0 || n == 0 || callFailed())
    return;
  if (slices < 1 || k % slices != 0 || (flags & 4) != 0) {
    record("rnn_cuda_gemm_partials: " + std::to_string(slices) +
           " slices of k=" + std::to_string(k) + " (flags " +
           std::to_string(flags) + ") are not supported");
    return;
  }
  bool bIsNK = (flags & 1) == 0, tf32 = (flags & 2) != 0;
  bool constantB = (flags & RNN_GEMM_B_CONSTANT) != 0;
  // Launched early only behind work ordered after the last fence
  // (orderedSinceFence).
  bool early = overlap && orderedSinceFence;
  if (packedCandidate(abDtype, cDtype, flags) &&
      rnn::cuda::tryPackedGemm(m, n, k, a, lda, b, ldb, !bIsNK, c, ldc,
                               /*accumulate=*/false, slices, currentStream)) {
    orderedSinceFence = true; // Launched in stream order.
    return;
  }
  if (preloadedThisCall && bIsNK && tf32 && constantB && abDtype == RNN_F32 &&
      cDtype == RNN_F32 &&
      rnn::cuda::tryPreloadedPartialsGemm(slices, m, n, k, a, lda, b, ldb, c,
                                          ldc, early, currentStream)) {
    orderedSinceFence = orderedSinceFence || !early;
    return;
  }
  cublasHandle_t handle = cublasForNextGemm(abDtype, cDtype);
  if (!handle)
    return;
  CublasScalars scalars(abDtype, tf32, /*accumulate=*/false);
  int64_t slice = k / slices;
  rnn::cuda::LtGemm gemm = {cublasType(abDtype),
                            cublasType(cDtype),
                            scalars.compute,
                            bIsNK ? CUBLAS_OP_T : CUBLAS_OP_N,
                            n,
                            m,
                            slice,
                            reinterpret_cast<const void *>(b),
                            ldb,
                            bIsNK ? slice : slice * ldb,
                            reinterpret_cast<const void *>(a),
                            lda,
                            slice,
                            reinterpret_cast<void *>(c),
                            ldc,
                            m * ldc,
                            static_cast<int32_t>(slices),
                            scalars.alpha(),
                            scalars.beta()};
  issueGemm(handle, gemm, (flags & RNN_GEMM_PER_STEP) != 0);
}

RNN_EXPORT void rnn_cuda_gemm_batched(int32_t abDtype, int32_t cDtype,
                                      int32_t flags, int64_t batch, int64_t m,
                                      int64_t n, int64_t k, int64_t a,
                                      int64_t lda, int64_t strideA, int64_t b,
                                      int64_t ldb, int64_t strideB, int64_t c,
                                      int64_t ldc, int64_t strideC) {
  afterReducedPrecisionCublas = false;
  if (batch == 0 || m == 0 || n == 0 || callFailed())
    return;
  if (batch < 0 || batch > INT32_MAX) {
    record("rnn_cuda_gemm_batched: a batch of " + std::to_string(batch) +
           " products is not supported");
    return;
  }
  // As rnn_cuda_gemm, column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: an A stored k x m is
  // read as its column-major m x k and transposed.
  bool bIsNK = (flags & 1) == 0, tf32 = (flags & 2) != 0;
  bool accumulate = (flags & 4) != 0, aIsKM = (flags & RNN_GEMM_A_KM) != 0;
  cublasHandle_t handle = cublasForNextGemm(abDtype, cDtype);
  if (!handle)
    return;
  CublasScalars scalars(abDtype, tf32, accumulate);
  rnn::cuda::LtGemm gemm = {cublasType(abDtype),
                            cublasType(cDtype),
                            scalars.compute,
                            bIsNK ? CUBLAS_OP_T : CUBLAS_OP_N,
                            n,
                            m,
                            k,
                            reinterpret_cast<const void *>(b),
                            ldb,
                            strideB,
                            reinterpret_cast<const void *>(a),
                            lda,
                            strideA,
                            reinterpret_cast<void *>(c),
                            ldc,
                            strideC,
                            static_cast<int32_t>(batch),
                            scalars.alpha(),
                            scalars.beta(),
                            aIsKM ? CUBLAS_OP_T : CUBLAS_OP_N};
  issueGemm(handle, gemm, (flags & RNN_GEMM_PER_STEP) != 0);
}
