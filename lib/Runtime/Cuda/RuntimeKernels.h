//===- RuntimeKernels.h - The runtime's own CUDA kernels --------*- C++ -*-===//
//
// Besides cuBLAS, the runtime runs a few kernels of its own (the packed TF32
// GEMM, the small-batch GEMV, the preloaded partials GEMM). They are built by
// nvcc for sm_90 with PTX, embedded in the library, and loaded per CUDA context
// on first use.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_RUNTIMEKERNELS_H
#define RNN_LIB_RUNTIME_CUDA_RUNTIMEKERNELS_H

#include <cuda.h>

#include <cstdint>

namespace rnn::cuda {

/// Operand types of the small-batch GEMV kernels.
enum GemvOperands { kGemvF32 = 0, kGemvBF16 = 1, kGemvF16 = 2 };
/// The GEMV kernels' K limits: 256, 512, 1024 and kGemvMaxK.
constexpr int64_t kGemvMaxK = 2048;
constexpr int kGemvSizes = 4;
/// The preloaded partials GEMM's kernels take K slices of 128, 256 and 512
/// (warp groups 1, 2, 4).
constexpr int kPreloadedSizes = 3;
/// The largest grid y dimension (the partials' slices).
constexpr int64_t kMaxGridY = 65535;

/// Dynamic shared memory of the preloaded partials kernel of `size`: 64 rows
/// of A's slice, each padded by 16 floats.
constexpr unsigned preloadedSharedBytes(int size) {
  return 64u * ((128u << size) + 16u) * 4u;
}

/// The kernels for one context and what they need to know about its device.
/// A kernel family that could not be loaded (before sm_90, or a load
/// failure) is not usable, and cuBLAS runs its GEMMs instead.
struct RuntimeKernels {
  unsigned long long contextId = 0;
  int64_t l2Bytes = 0, multiprocessors = 0, sharedBytesOptIn = 0;
  /// PackedTf32Gemm.cu.
  bool packedUsable = false;
  CUfunction packWeights = nullptr, packedGemm16 = nullptr,
             packedGemm32 = nullptr;
  /// SmallBatchGemv.cu: [GemvOperands][K up to 256 << index].
  bool gemvUsable = false;
  CUfunction gemv[3][kGemvSizes] = {};
  /// PreloadedPartialsGemm.cu: [K slice 128 << index].
  bool preloadedUsable = false;
  CUfunction preloaded[kPreloadedSizes] = {};
};

/// The kernels of the current context (loaded on first use), or nullptr
/// when no context is current. Contexts are told apart by their unique ID,
/// so a context created again after one was destroyed loads afresh.
const RuntimeKernels *currentKernels();

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_RUNTIMEKERNELS_H
