//===- RuntimeKernels.cpp - The runtime's own CUDA kernels ----------------===//

#include "RuntimeKernels.h"

#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <vector>

// const unsigned char rnn_<name>_fatbin[]: the .cu files built for sm_90
// with PTX (CMakeLists.txt).
#include "PackedTf32Gemm.fatbin.inc"
#include "PreloadedPartialsGemm.fatbin.inc"
#include "SmallBatchGemv.fatbin.inc"

namespace rnn::cuda {
namespace {

std::mutex kernelsMutex;
std::list<RuntimeKernels> kernelsPerContext; // Stable addresses.

/// Loads an embedded image (which must be 8-byte aligned: the array may not
/// be).
CUmodule loadModule(const unsigned char *data, size_t size) {
  std::vector<uint64_t> image((size + 7) / 8);
  std::memcpy(image.data(), data, size);
  CUmodule module = nullptr;
  if (cuModuleLoadData(&module, image.data()) != CUDA_SUCCESS)
    return nullptr;
  return module;
}

bool getFunction(CUmodule module, CUfunction &function, const char *name) {
  return cuModuleGetFunction(&function, module, name) == CUDA_SUCCESS;
}

bool loadPacked(RuntimeKernels &kernels) {
  CUmodule module = loadModule(rnn_packed_tf32_gemm_fatbin,
                               sizeof(rnn_packed_tf32_gemm_fatbin));
  if (!module)
    return false;
  bool loaded =
      getFunction(module, kernels.packWeights, "rnn_pack_tf32_weights") &&
      getFunction(module, kernels.packedGemm16, "rnn_packed_tf32_gemm_m16") &&
      getFunction(module, kernels.packedGemm32, "rnn_packed_tf32_gemm_m32");
  // The GEMM stages A in shared memory beyond the default 48 KiB.
  for (CUfunction gemm : {kernels.packedGemm16, kernels.packedGemm32})
    loaded = loaded &&
             cuFuncSetAttribute(
                 gemm, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                 static_cast<int>(kernels.sharedBytesOptIn)) == CUDA_SUCCESS;
  if (!loaded)
    cuModuleUnload(module);
  return loaded;
}

bool loadGemv(RuntimeKernels &kernels) {
  CUmodule module = loadModule(rnn_small_batch_gemv_fatbin,
                               sizeof(rnn_small_batch_gemv_fatbin));
  if (!module)
    return false;
  const char *types[] = {"f32", "bf16", "f16"};
  bool loaded = true;
  for (int type = kGemvF32; type <= kGemvF16; ++type)
    for (int size = 0; size < kGemvSizes; ++size) {
      std::string name = std::string("rnn_small_batch_gemv_") + types[type] +
                         "_k" + std::to_string(256 << size);
      loaded =
          loaded && getFunction(module, kernels.gemv[type][size], name.c_str());
    }
  if (!loaded)
    cuModuleUnload(module);
  return loaded;
}

bool loadPreloaded(RuntimeKernels &kernels) {
  CUmodule module = loadModule(rnn_preloaded_partials_gemm_fatbin,
                               sizeof(rnn_preloaded_partials_gemm_fatbin));
  if (!module)
    return false;
  bool loaded = true;
  for (int size = 0; size < kPreloadedSizes; ++size) {
    std::string name =
        "rnn_preloaded_partials_gemm_slice" + std::to_string(128 << size);
    unsigned shared = preloadedSharedBytes(size);
    // Slices over 128 stage more than the default 48 KiB of A.
    loaded = loaded &&
             getFunction(module, kernels.preloaded[size], name.c_str()) &&
             shared <= static_cast<unsigned>(kernels.sharedBytesOptIn) &&
             cuFuncSetAttribute(kernels.preloaded[size],
                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(shared)) == CUDA_SUCCESS;
  }
  if (!loaded)
    cuModuleUnload(module);
  return loaded;
}

/// Fills `kernels` for the current context; failures leave families
/// unusable rather than failing the call.
void load(RuntimeKernels &kernels) {
  CUdevice device;
  int major = 0, l2 = 0, sms = 0, optIn = 0;
  if (cuCtxGetDevice(&device) != CUDA_SUCCESS ||
      cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                           device) != CUDA_SUCCESS ||
      major < 9 ||
      cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device) !=
          CUDA_SUCCESS ||
      cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                           device) != CUDA_SUCCESS ||
      cuDeviceGetAttribute(
          &optIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
          device) != CUDA_SUCCESS)
    return;
  kernels.l2Bytes = l2;
  kernels.multiprocessors = sms;
  kernels.sharedBytesOptIn = optIn;
  kernels.packedUsable = loadPacked(kernels);
  kernels.gemvUsable = loadGemv(kernels);
  kernels.preloadedUsable = loadPreloaded(kernels);
}

} // namespace

const RuntimeKernels *currentKernels() {
  CUcontext context = nullptr;
  unsigned long long id = 0;
  if (cuCtxGetCurrent(&context) != CUDA_SUCCESS || !context ||
      cuCtxGetId(context, &id) != CUDA_SUCCESS)
    return nullptr;
  // Asked for at every small GEMM a model issues outside a graph: a thread
  // almost always asks for the context it asked for last.
  thread_local const RuntimeKernels *last = nullptr;
  if (last && last->contextId == id)
    return last;
  std::lock_guard<std::mutex> lock(kernelsMutex);
  for (const RuntimeKernels &kernels : kernelsPerContext)
    if (kernels.contextId == id)
      return last = &kernels;
  RuntimeKernels kernels;
  kernels.contextId = id;
  load(kernels);
  kernelsPerContext.push_back(kernels);
  return last = &kernelsPerContext.back();
}

} // namespace rnn::cuda
