//===- KernelLaunches.cpp - Loading and launching a model's kernels -------===//
//
// mgpuModuleLoad and mgpuModuleGetFunction load a model's kernels.
// mgpuLaunchKernel launches one in stream order, or early (programmatic
// dependent launch) where rnn_cuda_overlap_next_launch allows it and
// orderedSinceFence (CallState.h) says it is safe; mgpuLaunchClusterKernel
// launches clusters, a persistent kernel
// (rnn_cuda_require_resident_next_launch) cooperatively and only where all
// its blocks fit on the GPU at once.
//
//===----------------------------------------------------------------------===//

#include "rnn/Runtime/rnn_cuda_runtime.h"

#include "CallState.h"
#include "CudaErrors.h"
#include "StreamLanes.h"

#include <algorithm>
#include <mutex>
#include <string>

using namespace rnn::cuda;

RNN_EXPORT void *mgpuModuleLoad(void *data, size_t /*size*/) {
  // Runs from the model library's constructor: remember a failure for the
  // first call instead of failing the load.
  std::string saved;
  saved.swap(threadError);
  CUmodule module = nullptr;
  if (ensureContext())
    check(cuModuleLoadData(&module, data), "cuModuleLoadData");
  if (!threadError.empty()) {
    std::lock_guard<std::mutex> lock(loadMutex);
    if (loadError.empty())
      loadError = threadError;
  }
  threadError.swap(saved);
  return module;
}

RNN_EXPORT void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  return mgpuModuleLoad(data, 0);
}

RNN_EXPORT void mgpuModuleUnload(void *module) {
  if (module)
    cuModuleUnload(static_cast<CUmodule>(module));
}

RNN_EXPORT void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module) {
    record(std::string("kernel ") + name + " is not loaded");
    return nullptr;
  }
  CUfunction function = nullptr;
  check(cuModuleGetFunction(&function, static_cast<CUmodule>(module), name),
        "cuModuleGetFunction");
  return function;
}

namespace {

/// cuLaunchKernelEx's configuration of a launch, without attributes.
CUlaunchConfig launchConfig(intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                            intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                            int32_t sharedBytes, void *stream) {
  CUlaunchConfig config = {};
  config.gridDimX = gridX;
  config.gridDimY = gridY;
  config.gridDimZ = gridZ;
  config.blockDimX = blockX;
  config.blockDimY = blockY;
  config.blockDimZ = blockZ;
  config.sharedMemBytes = sharedBytes;
  config.hStream = static_cast<CUstream>(stream);
  return config;
}

/// Set by rnn_cuda_overlap_next_launch, consumed by the next launch.
thread_local bool overlapNextLaunch = false;

} // namespace

RNN_EXPORT void rnn_cuda_order_next_launch() {
  // The next grid that could launch early waits in stream order instead.
  orderedSinceFence = false;
}

RNN_EXPORT void rnn_cuda_overlap_next_launch() {
  // cuBLAS's bf16/f16 GEMMs on sm_90 let the next grid become resident
  // while they run; our kernels then sat on the GEMM's SMs and made the
  // steps of bf16 models 2-7% slower (measured on the H100,
  // docs/performance-notes.md), where after f32/TF32 GEMMs and our own kernels
  // early launch gains.
  overlapNextLaunch = overlapThisCall && !afterReducedPrecisionCublas;
}

RNN_EXPORT void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX,
                                 intptr_t blockY, intptr_t blockZ,
                                 int32_t sharedBytes, void *stream,
                                 void **params, void **extra,
                                 size_t /*paramsCount*/) {
  // Our kernels in time loops may read before they wait (orderedSinceFence).
  bool overlap = overlapNextLaunch && orderedSinceFence;
  overlapNextLaunch = false;
  afterReducedPrecisionCublas = false;
  if (!function || callFailed())
    return; // The missing kernel, or the call's failure, was recorded.
  // Above 48 KiB, dynamic shared memory is opt-in per function (the block
  // kernels hold a head's weights there).
  if (sharedBytes > 48 * 1024 &&
      !check(cuFuncSetAttribute(static_cast<CUfunction>(function),
                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                sharedBytes),
             "cuFuncSetAttribute"))
    return;
  if (!overlap) {
    orderedSinceFence = true;
    check(cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY, gridZ,
                         blockX, blockY, blockZ, sharedBytes,
                         static_cast<CUstream>(stream), params, extra),
          "cuLaunchKernel");
    return;
  }
  // The kernel waits for the grids ahead of it (griddepcontrol.wait) before
  // it touches memory, so it may be scheduled while they drain. Stream
  // capture turns the attribute into a programmatic edge of the graph.
  CUlaunchAttribute attribute = {};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config = launchConfig(gridX, gridY, gridZ, blockX, blockY,
                                       blockZ, sharedBytes, stream);
  config.attrs = &attribute;
  config.numAttrs = 1;
  check(cuLaunchKernelEx(&config, static_cast<CUfunction>(function), params,
                         extra),
        "cuLaunchKernelEx");
}

namespace {

/// Set by rnn_cuda_require_resident_next_launch, consumed by the next
/// cluster launch; the refusal is kept until rnn_cuda_take_refused_launch.
thread_local bool residentNextLaunch = false;
thread_local bool refusedLaunch = false;

/// Whether all of `config`'s grid, in clusters of `clusterBlocks` blocks,
/// can be resident at once on the current device.
bool allResident(CUfunction function, const CUlaunchConfig &config,
                 unsigned long long clusterBlocks) {
  int clusters = 0;
  if (cuOccupancyMaxActiveClusters(&clusters, function, &config) !=
      CUDA_SUCCESS)
    return false;
  unsigned long long blocks = static_cast<unsigned long long>(config.gridDimX) *
                              config.gridDimY * config.gridDimZ;
  return clusters * clusterBlocks >= blocks;
}

} // namespace

RNN_EXPORT void rnn_cuda_require_resident_next_launch() {
  residentNextLaunch = true;
  refusedLaunch = false;
}

RNN_EXPORT int32_t rnn_cuda_persistent_enabled() {
  return persistentThisCall ? 1 : 0;
}

RNN_EXPORT int32_t rnn_cuda_persistent_batch_tiles(int32_t blocksPerTile) {
  // A lane of a wavefront runs beside others (a bidirectional layer's two
  // directions, a stack's layers), whose kernels would then wait for each
  // other's SMs: one tile each, as they ran side by side before tiles.
  if (isLaneStream(currentStream))
    return 1;
  CUdevice device;
  int multiprocessors = 0;
  if (blocksPerTile <= 0 || !ensureContext() ||
      cuCtxGetDevice(&device) != CUDA_SUCCESS ||
      cuDeviceGetAttribute(&multiprocessors,
                           CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                           device) != CUDA_SUCCESS)
    return 1;
  int tiles = std::max(multiprocessors / blocksPerTile, 1);
  return batchTilesThisCall > 0 ? std::min(tiles, batchTilesThisCall) : tiles;
}

RNN_EXPORT int32_t rnn_cuda_persistent_low_latency() {
  return lowLatencyThisCall ? 1 : 0;
}

RNN_EXPORT int32_t rnn_cuda_take_refused_launch() {
  bool refused = refusedLaunch;
  refusedLaunch = false;
  return refused ? 1 : 0;
}

RNN_EXPORT void
mgpuLaunchClusterKernel(void *function, intptr_t clusterX, intptr_t clusterY,
                        intptr_t clusterZ, intptr_t gridX, intptr_t gridY,
                        intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                        intptr_t blockZ, int32_t sharedBytes, void *stream,
                        void **params, void **extra, size_t /*paramsCount*/) {
  bool resident = residentNextLaunch;
  residentNextLaunch = false;
  overlapNextLaunch = false;
  afterReducedPrecisionCublas = false;
  auto refuse = [&] {
    if (resident)
      refusedLaunch = true;
  };
  if (!function || callFailed())
    return refuse(); // The missing kernel, or the call's failure, was recorded.
  if (resident && !persistentThisCall)
    return refuse();
  auto kernel = static_cast<CUfunction>(function);
  // Above 48 KiB, dynamic shared memory is opt-in per function; a GPU with
  // less than the kernel asks for runs the fallback.
  CUresult optIn = cuFuncSetAttribute(
      kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, sharedBytes);
  if (optIn != CUDA_SUCCESS) {
    if (!resident)
      check(optIn, "cuFuncSetAttribute");
    return refuse();
  }
  // Above 8 blocks a cluster's size is not portable: the kernel must allow
  // it (the H100 and H200 run 16).
  if (clusterX * clusterY * clusterZ > 8) {
    CUresult allow = cuFuncSetAttribute(
        kernel, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (allow != CUDA_SUCCESS) {
      if (!resident)
        check(allow, "cuFuncSetAttribute (non-portable cluster size)");
      return refuse();
    }
  }
  CUlaunchAttribute attributes[2] = {};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attributes[0].value.clusterDim.x = clusterX;
  attributes[0].value.clusterDim.y = clusterY;
  attributes[0].value.clusterDim.z = clusterZ;
  // A cooperative launch: the driver starts the grid only when all its
  // blocks can be resident together, also beside other grids (two
  // persistent kernels on two streams never hold part of the GPU each).
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attributes[1].value.cooperative = 1;
  CUlaunchConfig config = launchConfig(gridX, gridY, gridZ, blockX, blockY,
                                       blockZ, sharedBytes, stream);
  config.attrs = attributes;
  config.numAttrs = resident ? 2 : 1;
  // A kernel whose blocks wait for each other must have all of them on the
  // GPU at once, or it never finishes: the caller runs its fallback instead
  // (a GPU with fewer SMs, less shared memory, or no room for the clusters).
  if (resident && !allResident(kernel, config, clusterX * clusterY * clusterZ))
    return refuse();
  orderedSinceFence = true;
  if (!check(cuLaunchKernelEx(&config, kernel, params, extra),
             "cuLaunchKernelEx"))
    refuse();
}
