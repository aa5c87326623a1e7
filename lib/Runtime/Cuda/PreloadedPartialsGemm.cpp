//===- PreloadedPartialsGemm.cpp - K-split partials, weights loaded early -===//

#include "PreloadedPartialsGemm.h"

#include "CudaErrors.h"
#include "RuntimeKernels.h"

namespace rnn::cuda {

bool tryPreloadedPartialsGemm(int64_t slices, int64_t m, int64_t n, int64_t k,
                              CUdeviceptr a, int64_t lda, CUdeviceptr b,
                              int64_t ldb, CUdeviceptr c, int64_t ldc,
                              bool dependentLaunch, CUstream stream) {
  constexpr int64_t kGroupDepth = 128;
  if (slices < 1 || k % slices != 0 || m < 1 || m > kPreloadedMaxRows ||
      n < 1 || n > (int64_t{1} << 30) || ldc < n || a % 16 != 0 ||
      b % 16 != 0 || lda < k || ldb < k || lda % 4 != 0 || ldb % 4 != 0 ||
      slices > kMaxGridY)
    return false;
  int64_t slice = k / slices;
  int size = 0; // Kernel `size` takes slices of 128 << size.
  while (size < kPreloadedSizes && (kGroupDepth << size) != slice)
    ++size;
  if (size == kPreloadedSizes)
    return false;
  const RuntimeKernels *kernels = currentKernels();
  if (!kernels || !kernels->preloadedUsable)
    return false;
  constexpr int64_t kColumnsPerBlock = 64;
  CUlaunchAttribute attribute = {};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config = {};
  config.gridDimX =
      static_cast<unsigned>((n + kColumnsPerBlock - 1) / kColumnsPerBlock);
  config.gridDimY = static_cast<unsigned>(slices);
  config.gridDimZ = 1;
  config.blockDimX = 128u << size;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = preloadedSharedBytes(size);
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = dependentLaunch ? 1 : 0;
  int mInt = static_cast<int>(m), nInt = static_cast<int>(n);
  void *params[] = {&a, &lda, &b, &ldb, &c, &ldc, &mInt, &nInt};
  check(cuLaunchKernelEx(&config, kernels->preloaded[size], params, nullptr),
        "cuLaunchKernelEx (preloaded partials GEMM)");
  return true;
}

} // namespace rnn::cuda
