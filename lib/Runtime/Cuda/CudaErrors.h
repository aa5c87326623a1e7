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

/// Records `message` on the calling thread unless an error is already there.
void record(const std::string &message);

/// Whether `result` is success; otherwise records "<what> failed: <name>
/// (<text>)".
bool check(CUresult result, const char *what);

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_CUDAERRORS_H
