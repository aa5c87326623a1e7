//===- StreamLanes.h - Concurrent lanes of a model call ---------*- C++ -*-===//
//
// rnn_cuda_lane_begin / rnn_cuda_lane_end / rnn_cuda_lanes_join
// (rnn_cuda_runtime.h) issue a layer's chunk of a wavefront on a stream of
// its own; StreamLanes.cpp holds them.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_STREAMLANES_H
#define RNN_LIB_RUNTIME_CUDA_STREAMLANES_H

#include <cuda.h>

#pragma GCC visibility push(hidden)

namespace rnn::cuda {

/// The most lanes a call may use at once.
constexpr int kMaxLanes = 16;

/// Whether `stream` is one of the calling thread's lane streams, which the
/// generated code's stream destruction and synchronisation leave alone.
bool isLaneStream(CUstream stream);

} // namespace rnn::cuda

#pragma GCC visibility pop

#endif // RNN_LIB_RUNTIME_CUDA_STREAMLANES_H
