//===- LtCandidates.cpp - GEMMs on a chosen cuBLASLt algorithm ------------===//

#include "LtCandidates.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace rnn::cuda;

namespace {

/// The largest power of two up to 256 that divides `pointer` and, in a
/// batch, every later matrix's start (`strideBytes` on): cuBLASLt's
/// heuristic assumes 256-byte aligned operands unless told otherwise, and a
/// gate window or a K slice starts inside its buffer.
uint32_t alignmentOf(const void *pointer, int64_t strideBytes, int32_t batch) {
  uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  if (batch > 1)
    address |= static_cast<uintptr_t>(strideBytes);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

/// Bytes per element of the types the runtime passes (f64, f32, bf16, f16).
int64_t bytesOf(cudaDataType type) {
  return type == CUDA_R_64F ? 8 : type == CUDA_R_32F ? 4 : 2;
}

/// cuBLASLt's descriptors of one problem, destroyed with it.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;

  explicit Descriptors(const LtGemm &gemm) {
    auto ok = [&](cublasStatus_t s) {
      if (status == CUBLAS_STATUS_SUCCESS)
        status = s;
      return status == CUBLAS_STATUS_SUCCESS;
    };
    cudaDataType scale =
        gemm.compute == CUBLAS_COMPUTE_64F ? CUDA_R_64F : CUDA_R_32F;
    if (!ok(cublasLtMatmulDescCreate(&op, gemm.compute, scale)) ||
        !ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &gemm.transA, sizeof(gemm.transA))))
      return;
    bool transposed = gemm.transA == CUBLAS_OP_T;
    if (!ok(cublasLtMatrixLayoutCreate(
            &a, gemm.abType, transposed ? gemm.depth : gemm.rows,
            transposed ? gemm.rows : gemm.depth, gemm.lda)) ||
        !ok(cublasLtMatrixLayoutCreate(&b, gemm.abType, gemm.depth, gemm.cols,
                                       gemm.ldb)) ||
        !ok(cublasLtMatrixLayoutCreate(&c, gemm.cType, gemm.rows, gemm.cols,
                                       gemm.ldc)))
      return;
    if (gemm.batch <= 1)
      return;
    for (auto [layout, stride] :
         {std::pair{a, gemm.strideA}, std::pair{b, gemm.strideB},
          std::pair{c, gemm.strideC}})
      if (!ok(cublasLtMatrixLayoutSetAttribute(
              layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &gemm.batch,
              sizeof(gemm.batch))) ||
          !ok(cublasLtMatrixLayoutSetAttribute(
              layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
              sizeof(stride))))
        return;
  }
  ~Descriptors() {
    for (cublasLtMatrixLayout_t layout : {a, b, c})
      if (layout)
        cublasLtMatrixLayoutDestroy(layout);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

/// The thread's cuBLASLt handle (handles are not shared between threads, as
/// for cuBLAS); null when it could not be created.
cublasLtHandle_t threadLtHandle() {
  struct Handle {
    cublasLtHandle_t handle = nullptr;
    ~Handle() {
      if (handle)
        cublasLtDestroy(handle);
    }
  };
  thread_local Handle holder;
  if (!holder.handle && cublasLtCreate(&holder.handle) != CUBLAS_STATUS_SUCCESS)
    holder.handle = nullptr;
  return holder.handle;
}

} // namespace

cublasStatus_t rnn::cuda::runLtCandidate(const LtGemm &gemm, int candidate,
                                         void *workspace, size_t workspaceBytes,
                                         cudaStream_t stream) {
  cublasLtHandle_t handle = threadLtHandle();
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  Descriptors descriptors(gemm);
  if (descriptors.status != CUBLAS_STATUS_SUCCESS)
    return descriptors.status;
  uint32_t alignA = alignmentOf(gemm.a, gemm.strideA * bytesOf(gemm.abType),
                                gemm.batch),
           alignB = alignmentOf(gemm.b, gemm.strideB * bytesOf(gemm.abType),
                                gemm.batch),
           alignC = alignmentOf(gemm.c, gemm.strideC * bytesOf(gemm.cType),
                                gemm.batch);
  // The heuristic's list depends on everything that describes the problem;
  // asked once per problem and thread (graphs capture each problem again
  // per tuning variant).
  char key[512];
  std::snprintf(
      key, sizeof(key),
      "%d %d %d %d %lld %lld %lld %lld %lld %lld %lld %lld %lld %d "
      "%u %u %u %zu",
      gemm.abType, gemm.cType, gemm.compute, gemm.transA,
      static_cast<long long>(gemm.rows), static_cast<long long>(gemm.cols),
      static_cast<long long>(gemm.depth), static_cast<long long>(gemm.lda),
      static_cast<long long>(gemm.strideA), static_cast<long long>(gemm.ldb),
      static_cast<long long>(gemm.strideB), static_cast<long long>(gemm.ldc),
      static_cast<long long>(gemm.strideC), gemm.batch, alignA, alignB, alignC,
      workspaceBytes);
  thread_local std::map<std::string, std::vector<cublasLtMatmulAlgo_t>>
      heuristics;
  auto found = heuristics.find(key);
  if (found == heuristics.end()) {
    cublasLtMatmulPreference_t preference = nullptr;
    std::vector<cublasLtMatmulAlgo_t> algos;
    if (cublasLtMatmulPreferenceCreate(&preference) == CUBLAS_STATUS_SUCCESS) {
      cublasLtMatmulPreferenceSetAttribute(
          preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
          sizeof(workspaceBytes));
      for (auto [attribute, alignment] :
           {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignA},
            std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignB},
            std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignC},
            std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignC}})
        cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment,
                                             sizeof(alignment));
      cublasLtMatmulHeuristicResult_t results[kLtCandidates] = {};
      int count = 0;
      if (cublasLtMatmulAlgoGetHeuristic(
              handle, descriptors.op, descriptors.a, descriptors.b,
              descriptors.c, descriptors.c, preference, kLtCandidates, results,
              &count) == CUBLAS_STATUS_SUCCESS)
        for (int i = 0; i < count; ++i)
          if (results[i].state == CUBLAS_STATUS_SUCCESS)
            algos.push_back(results[i].algo);
      cublasLtMatmulPreferenceDestroy(preference);
    }
    found = heuristics.emplace(key, std::move(algos)).first;
  }
  if (candidate < 0 || candidate >= static_cast<int>(found->second.size()))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // A is cuBLAS's A (our B, the weights) and B cuBLAS's B (our A).
  return cublasLtMatmul(
      handle, descriptors.op, gemm.alpha, gemm.a, descriptors.a, gemm.b,
      descriptors.b, gemm.beta, gemm.c, descriptors.c, gemm.c, descriptors.c,
      &found->second[candidate], workspace, workspaceBytes, stream);
}
