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

void rnn::cuda::record(const std::string &message) {
  if (threadError.empty())
    threadError = message;
}

bool rnn::cuda::check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return true;
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  record(std::string(what) + " failed: " + (name ? name : "CUDA error") +
         (text ? std::string(" (") + text + ")" : std::string()));
  return false;
}

RNN_EXPORT int32_t rnn_cuda_take_error(char *buffer, size_t size) {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(loadMutex);
    if (!loadError.empty())
      message = "loading the model's kernels: " + loadError;
  }
  if (message.empty())
    message.swap(threadError);
  threadError.clear();
  if (message.empty())
    return 0;
  if (buffer && size) {
    std::strncpy(buffer, message.c_str(), size - 1);
    buffer[size - 1] = '\0';
  }
  return 1;
}
