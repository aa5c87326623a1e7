//===- RuntimeKernels.h - The runtime's own CUDA kernels --------*- C++ -*-===//
//
// Besides cuBLAS, the runtime runs a few kernels of its own (the packed TF32
// GEMM, the small-batch GEMV). They are built by nvcc for sm_90 with PTX,
// embedded in the library, and loaded per CUDA context on first use.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_RUNTIMEKERNELS_H
#define RNN_LIB_RUNTIME_CUDA_RUNTIMEKERNELS_H

#include <cuda.h>

#include <cstdint>

namespace rnn::cuda {

/// The kernels for one context and what they need to know about its device.
struct RuntimeKernels {
  CUcontext context = nullptr;
  /// sm_90 or later and every kernel loaded; otherwise cuBLAS runs every
  /// GEMM.
  bool usable = false;
  int64_t l2Bytes = 0, multiprocessors = 0, sharedBytesOptIn = 0;
  /// PackedTf32Gemm.cu.
  CUfunction packWeights = nullptr, packedGemm16 = nullptr,
             packedGemm32 = nullptr;
  /// SmallBatchGemv.cu: [f32, bf16, f16 operands][K up to 256, 512, 1024,
  /// 2048].
  CUfunction gemv[3][4] = {};
};

/// The kernels of the current context (loaded on first use), or nullptr
/// when no context is current. Load failures are not errors: they leave the
/// kernels unusable.
const RuntimeKernels *currentKernels();

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_RUNTIMEKERNELS_H
