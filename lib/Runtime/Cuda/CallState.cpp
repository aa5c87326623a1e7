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

long long rnn::cuda::pinnedCublasWorkspaceBytes() {
  const char *value = getenv("RNN_CUDA_CUBLAS_WORKSPACE_MIB");
  if (!value || !*value)
    return -1;
  char *end = nullptr;
  long long mib = std::strtoll(value, &end, 10);
  // Up to 1 TiB: a larger value is no size a GPU has (and would overflow).
  return *end == '\0' && mib >= 0 && mib <= (1 << 20) ? mib << 20 : -1;
}

int rnn::cuda::batchTilesSetting() {
  const char *value = getenv("RNN_CUDA_BATCH_TILES");
  if (!value || !*value)
    return 0;
  char *end = nullptr;
  long tiles = std::strtol(value, &end, 10);
  return *end == '\0' && tiles > 0 && tiles <= 1024 ? static_cast<int>(tiles)
                                                    : -1;
}

int rnn::cuda::pinnedGemmCandidate() {
  const char *value = getenv("RNN_CUDA_GEMM_CANDIDATE");
  if (!value || !*value)
    return kTunedCandidate;
  char *end = nullptr;
  long candidate = std::strtol(value, &end, 10);
  return *end == '\0' && candidate >= -1 && candidate < rnn::cuda::kLtCandidates
             ? static_cast<int>(candidate)
             : kTunedCandidate;
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
