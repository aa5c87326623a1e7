//===- CudaErrors.h - How the CUDA runtime reports errors -------*- C++ -*-===//
//
// Errors never abort: the first one on a thread is recorded, and
// librnn_runtime returns it from the model call (rnn_cuda_take_error).
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_CUDAERRORS_H
#define RNN_LIB_RUNTIME_CUDA_CUDAERRORS_H

#include <cuda.h>

#include <string>

namespace rnn::cuda {

/// Records `message` on the calling thread unless an error is already there;
/// `outOfMemory` marks it as a failed allocation (the model call then
/// returns RNN_ERROR_OUT_OF_MEMORY).
void record(const std::string &message, bool outOfMemory = false);

/// Whether `result` is success; otherwise records "<what> failed: <name>
/// (<text>)" (CUDA_ERROR_OUT_OF_MEMORY as a failed allocation).
bool check(CUresult result, const char *what);

/// Drops the calling thread's recorded error (a failed try that the caller
/// recovers from).
void clearError();

/// Whether the calling thread's call has failed: the rest of its work is
/// not queued (a kernel after a failed allocation would read a null
/// pointer and leave the context unusable), only frees still are.
bool callFailed();

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_CUDAERRORS_H
