//===- CudaErrors.cpp - How the CUDA runtime reports errors ---------------===//
//
// Errors never abort: record() keeps the first one on a thread, and
// librnn_runtime takes it (rnn_cuda_take_error) to return it from the model
// call, an error while loading a model's kernels first.
//
//===----------------------------------------------------------------------===//

#include "CudaErrors.h"

#include "rnn/Runtime/rnn_cuda_runtime.h"

#include "CallState.h"

#include <cstring>

using namespace rnn::cuda;

namespace {
/// Whether the recorded error of this thread is a failed allocation.
thread_local bool threadErrorIsOutOfMemory = false;
} // namespace

void rnn::cuda::record(const std::string &message, bool outOfMemory) {
  if (!threadError.empty())
    return;
  threadError = message;
  threadErrorIsOutOfMemory = outOfMemory;
}

bool rnn::cuda::check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return true;
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  record(std::string(what) + " failed: " + (name ? name : "CUDA error") +
             (text ? std::string(" (") + text + ")" : std::string()),
         result == CUDA_ERROR_OUT_OF_MEMORY);
  return false;
}

void rnn::cuda::clearError() {
  threadError.clear();
  threadErrorIsOutOfMemory = false;
}

bool rnn::cuda::callFailed() { return !threadError.empty(); }

RNN_EXPORT int32_t rnn_cuda_take_error(char *buffer, size_t size) {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(loadMutex);
    if (!loadError.empty())
      message = "loading the model's kernels: " + loadError;
  }
  bool outOfMemory = false;
  if (message.empty()) {
    message.swap(threadError);
    outOfMemory = threadErrorIsOutOfMemory;
  }
  clearError();
  if (message.empty())
    return 0;
  if (buffer && size) {
    std::strncpy(buffer, message.c_str(), size - 1);
    buffer[size - 1] = '\0';
  }
  return outOfMemory ? 2 : 1;
}
