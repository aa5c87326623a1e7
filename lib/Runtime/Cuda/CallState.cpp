//===- CallState.cpp - A model call's stream, context and settings --------===//
//
// The state the runtime's files share (CallState.h), defined here in one
// place, and rnn_cuda_set_stream, which every model call starts with: it
// makes the device's primary context current and reads the settings from
// the environment.
//
//===----------------------------------------------------------------------===//

#include "CallState.h"

#include "rnn/Runtime/rnn_cuda_runtime.h"

#include "CudaErrors.h"
#include "LtCandidates.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace rnn::cuda {

thread_local CUstream currentStream = nullptr;
thread_local std::string threadError;
std::mutex loadMutex;
std::string loadError; // Errors while loading kernels (any thread).

thread_local bool graphsThisCall = true;
thread_local bool overlapThisCall = true;
thread_local bool packedThisCall = true;
thread_local bool gemvThisCall = true;
thread_local bool preloadedThisCall = true;
thread_local bool persistentThisCall = true;
thread_local bool lowLatencyThisCall = true;
thread_local bool lanesThisCall = true;
thread_local int batchTilesThisCall = 0;
thread_local long long pinnedWorkspaceThisCall = -1;
thread_local int pinnedCandidateThisCall = kTunedCandidate;
thread_local int gemmCandidateThisCall = -1;
thread_local int ltGemmsIssued = 0;
thread_local size_t workspaceBytesThisCall = 0;
thread_local CUdeviceptr callWorkspace = 0;
thread_local bool afterReducedPrecisionCublas = false;
thread_local bool orderedSinceFence = false;
thread_local bool capturingThisThread = false;
thread_local bool cublasWarmThisThread = false;

} // namespace rnn::cuda

using namespace rnn::cuda;

namespace {

int32_t defaultDevice = 0;

} // namespace

bool rnn::cuda::ensureContext() {
  static std::once_flag once;
  static CUresult initResult = CUDA_SUCCESS;
  std::call_once(once, [] { initResult = cuInit(0); });
  if (!check(initResult, "cuInit"))
    return false;
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current)
    return true;
  CUdevice device;
  if (!check(cuDeviceGet(&device, defaultDevice), "cuDeviceGet"))
    return false;
  CUcontext context;
  if (!check(cuDevicePrimaryCtxRetain(&context, device),
             "cuDevicePrimaryCtxRetain"))
    return false;
  return check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

bool rnn::cuda::settingOn(const char *variable) {
  const char *value = getenv(variable);
  return !value || std::strcmp(value, "0") != 0;
}

namespace {

/// A whole-number setting as the environment has it: unset (or empty), a
/// number from `lo` to `hi`, or anything else (not valid).
struct IntegerSetting {
  bool set = false, valid = false;
  long long value = 0;
};

IntegerSetting integerSetting(const char *variable, long long lo,
                              long long hi) {
  IntegerSetting setting;
  const char *text = getenv(variable);
  if (!text || !*text)
    return setting;
  setting.set = true;
  char *end = nullptr;
  setting.value = std::strtoll(text, &end, 10);
  setting.valid = *end == '\0' && setting.value >= lo && setting.value <= hi;
  return setting;
}

} // namespace

long long rnn::cuda::pinnedCublasWorkspaceBytes() {
  // Up to 1 TiB: a larger value is no size a GPU has (and would overflow).
  IntegerSetting mib =
      integerSetting("RNN_CUDA_CUBLAS_WORKSPACE_MIB", 0, 1 << 20);
  return mib.valid ? mib.value << 20 : -1;
}

int rnn::cuda::batchTilesSetting() {
  IntegerSetting tiles = integerSetting("RNN_CUDA_BATCH_TILES", 1, 1024);
  if (!tiles.set)
    return 0;
  return tiles.valid ? static_cast<int>(tiles.value) : -1;
}

int rnn::cuda::pinnedGemmCandidate() {
  IntegerSetting candidate = integerSetting("RNN_CUDA_GEMM_CANDIDATE", -1,
                                            rnn::cuda::kLtCandidates - 1);
  return candidate.valid ? static_cast<int>(candidate.value) : kTunedCandidate;
}

RNN_EXPORT void rnn_cuda_set_stream(void *stream) {
  currentStream = static_cast<CUstream>(stream);
  ensureContext();
  // The settings are read here, so that every model call (which sets its
  // stream first) and any direct use of rnn_cuda_gemm after setting a
  // stream see the environment as it is then.
  graphsThisCall = settingOn("RNN_CUDA_GRAPHS");
  overlapThisCall = settingOn("RNN_CUDA_OVERLAP_LAUNCHES");
  packedThisCall = settingOn("RNN_CUDA_PACKED_GEMM");
  gemvThisCall = settingOn("RNN_CUDA_GEMV");
  preloadedThisCall = settingOn("RNN_CUDA_PRELOADED_GEMM");
  persistentThisCall = settingOn("RNN_CUDA_PERSISTENT");
  lanesThisCall = settingOn("RNN_CUDA_LANES");
  lowLatencyThisCall = settingOn("RNN_CUDA_LOW_LATENCY");
  batchTilesThisCall = batchTilesSetting();
  if (batchTilesThisCall < 0) {
    // A limit that is not one is not ignored: the call fails, saying so.
    record(std::string("RNN_CUDA_BATCH_TILES must be a whole number from 1 "
                       "to 1024 (the most batch tiles of a persistent "
                       "kernel), or empty; it is '") +
           getenv("RNN_CUDA_BATCH_TILES") + "'");
    batchTilesThisCall = 0;
  }
  pinnedWorkspaceThisCall = pinnedCublasWorkspaceBytes();
  pinnedCandidateThisCall = pinnedGemmCandidate();
  gemmCandidateThisCall = std::max(pinnedCandidateThisCall, -1);
  workspaceBytesThisCall = pinnedWorkspaceThisCall >= 0
                               ? static_cast<size_t>(pinnedWorkspaceThisCall)
                               : 0;
  afterReducedPrecisionCublas = false;
  orderedSinceFence = false;
}

RNN_EXPORT void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }
