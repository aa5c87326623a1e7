//===- SmallBatchGemv.cpp - Recurrent products of a few rows --------------===//

#include "SmallBatchGemv.h"

#include "CudaErrors.h"
#include "RuntimeKernels.h"

#include "rnn/Runtime/rnn_runtime.h"

namespace rnn::cuda {

bool trySmallBatchGemv(int32_t dtype, int64_t m, int64_t n, int64_t k,
                       CUdeviceptr a, int64_t lda, CUdeviceptr b, int64_t ldb,
                       CUdeviceptr c, int64_t ldc, bool accumulate,
                       bool dependentLaunch, CUstream stream) {
  constexpr int64_t kColumnsPerBlock = 8; // A warp per column.
  int type = dtype == RNN_F32    ? kGemvF32
             : dtype == RNN_BF16 ? kGemvBF16
             : dtype == RNN_F16  ? kGemvF16
                                 : -1;
  if (type < 0)
    return false;
  // Elements per 16-byte vector: a lane loads whole vectors.
  int64_t vector = type == kGemvF32 ? 4 : 8;
  if (m < 1 || m > kGemvMaxRows || k < 1 || k > kGemvMaxK ||
      m * k > kGemvMaxElements || k % vector != 0 || a % 16 != 0 ||
      b % 16 != 0 || lda % vector != 0 || ldb % vector != 0 ||
      n > (int64_t{1} << 30))
    return false;
  const RuntimeKernels *kernels = currentKernels();
  if (!kernels || !kernels->gemvUsable)
    return false;
  int size = 0; // The kernel for K up to 256 << size.
  while ((int64_t{256} << size) < k)
    ++size;
  CUfunction kernel = kernels->gemv[type][size];
  CUlaunchAttribute attribute = {};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config = {};
  config.gridDimX = (n + kColumnsPerBlock - 1) / kColumnsPerBlock;
  config.gridDimY = 1;
  config.gridDimZ = 1;
  config.blockDimX = 32 * kColumnsPerBlock;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = dependentLaunch ? 1 : 0;
  int mInt = static_cast<int>(m), nInt = static_cast<int>(n),
      kInt = static_cast<int>(k), accumulateInt = accumulate ? 1 : 0;
  void *params[] = {&a,   &lda,  &b,    &ldb,  &c,
                    &ldc, &mInt, &nInt, &kInt, &accumulateInt};
  check(cuLaunchKernelEx(&config, kernel, params, nullptr),
        "cuLaunchKernelEx (small-batch GEMV)");
  return true;
}

} // namespace rnn::cuda
