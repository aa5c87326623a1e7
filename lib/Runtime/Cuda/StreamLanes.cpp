//===- StreamLanes.cpp - Concurrent lanes of a model call ----------------===//
//
// A stack of recurrent layers cut into chunks of time steps
// (rnn-layer-wavefront) runs layer l's chunk k while layer l+1 runs chunk
// k-1: each layer's work is issued on a stream of its own (its lane), which
// waits for the layer below only where it reads that layer's chunk. The
// generated code brackets each layer's chunk with rnn_cuda_lane_begin and
// rnn_cuda_lane_end and joins the lanes back into the call's stream after
// the last chunk. Under stream capture the lanes become concurrent branches
// of the call's graph.
//
// Each lane has its own cuBLAS workspace while it runs: cuBLAS and
// cuBLASLt may use a workspace for as long as their kernels run, and two
// lanes' GEMMs run at once.
//
//===----------------------------------------------------------------------===//

#include "rnn/Runtime/rnn_cuda_runtime.h"

#include "CallState.h"
#include "CudaErrors.h"
#include "StreamLanes.h"

#include <array>
#include <string>
#include <vector>

using namespace rnn::cuda;

namespace {

/// A thread's lane streams and events for one context, created on first
/// use and kept with the thread.
struct LaneStreams {
  CUcontext context = nullptr;
  std::array<CUstream, kMaxLanes> streams{};
  /// Recorded on each lane's stream at its rnn_cuda_lane_end.
  std::array<CUevent, kMaxLanes> done{};
  /// Recorded on the call's stream when the first lane begins.
  CUevent fork = nullptr;
};
thread_local std::vector<LaneStreams> laneStreams;

/// While lanes are in use: the call's stream and workspace, which each
/// rnn_cuda_lane_end restores and rnn_cuda_lanes_join joins into.
thread_local LaneStreams *activeLanes = nullptr;
thread_local CUstream callerStream = nullptr;
thread_local CUdeviceptr callerWorkspace = 0;
thread_local size_t callerWorkspaceBytes = 0;
/// The lanes begun since the fork, and each one's workspace.
thread_local uint32_t lanesUsed = 0;
thread_local std::array<CUdeviceptr, kMaxLanes> laneWorkspaces{};
/// cuBLAS's workspace for a lane when the call leaves the workspace to
/// cuBLAS (direct calls, untuned graphs): cuBLAS's own pool is the
/// handle's, which two lanes must not share.
constexpr size_t kLaneWorkspaceBytes = size_t(4) << 20;

/// This thread's lanes for the current context; null on failure (recorded).
LaneStreams *lanesForContext() {
  CUcontext context = nullptr;
  if (!check(cuCtxGetCurrent(&context), "cuCtxGetCurrent") || !context)
    return nullptr;
  for (LaneStreams &lanes : laneStreams)
    if (lanes.context == context)
      return &lanes;
  LaneStreams lanes;
  lanes.context = context;
  if (!check(cuEventCreate(&lanes.fork, CU_EVENT_DISABLE_TIMING),
             "cuEventCreate"))
    return nullptr;
  laneStreams.push_back(lanes);
  return &laneStreams.back();
}

/// Lane `lane`'s stream and event, created on first use.
bool ensureLane(LaneStreams &lanes, int lane) {
  if (lanes.streams[lane])
    return true;
  return check(cuStreamCreate(&lanes.streams[lane], CU_STREAM_NON_BLOCKING),
               "cuStreamCreate") &&
         check(cuEventCreate(&lanes.done[lane], CU_EVENT_DISABLE_TIMING),
               "cuEventCreate");
}

bool validLane(int64_t lane, const char *function) {
  if (lane >= 0 && lane < kMaxLanes)
    return true;
  record(std::string(function) + ": lane " + std::to_string(lane) +
         " is not in 0.." + std::to_string(kMaxLanes - 1));
  return false;
}

} // namespace

bool rnn::cuda::isLaneStream(CUstream stream) {
  for (const LaneStreams &lanes : laneStreams)
    for (CUstream laneStream : lanes.streams)
      if (laneStream && laneStream == stream)
        return true;
  return false;
}

RNN_EXPORT void rnn_cuda_lane_begin(int64_t lane, int64_t after) {
  // RNN_CUDA_LANES=0: every lane on the call's stream, in program order.
  if (!lanesThisCall || callFailed() || !validLane(lane, "rnn_cuda_lane_begin"))
    return;
  if (!activeLanes) {
    LaneStreams *lanes = lanesForContext();
    if (!lanes ||
        !check(cuEventRecord(lanes->fork, currentStream), "cuEventRecord"))
      return;
    activeLanes = lanes;
    callerStream = currentStream;
    callerWorkspace = callWorkspace;
    callerWorkspaceBytes = workspaceBytesThisCall;
    lanesUsed = 0;
  }
  LaneStreams &lanes = *activeLanes;
  if (!ensureLane(lanes, lane))
    return;
  CUstream stream = lanes.streams[lane];
  uint32_t bit = 1u << lane;
  if (!(lanesUsed & bit)) {
    // The lane's first chunk: everything the call queued before the lanes.
    if (!check(cuStreamWaitEvent(stream, lanes.fork, 0), "cuStreamWaitEvent"))
      return;
    size_t bytes =
        callerWorkspaceBytes ? callerWorkspaceBytes : kLaneWorkspaceBytes;
    CUdeviceptr workspace = 0;
    if (cuMemAllocAsync(&workspace, bytes, stream) != CUDA_SUCCESS)
      workspace = 0; // cuBLAS falls back to its own (recorded nowhere).
    laneWorkspaces[lane] = workspace;
    lanesUsed |= bit;
  }
  if (after >= 0) {
    if (!validLane(after, "rnn_cuda_lane_begin") ||
        !(lanesUsed & (1u << after))) {
      record("rnn_cuda_lane_begin: lane " + std::to_string(lane) +
             " waits for lane " + std::to_string(after) +
             ", which has not run");
      return;
    }
    if (!check(cuStreamWaitEvent(stream, lanes.done[after], 0),
               "cuStreamWaitEvent"))
      return;
  }
  currentStream = stream;
  callWorkspace = laneWorkspaces[lane];
  workspaceBytesThisCall =
      callWorkspace
          ? (callerWorkspaceBytes ? callerWorkspaceBytes : kLaneWorkspaceBytes)
          : 0;
  // The lane's first grid follows another lane's work, or none of its own:
  // it launches in stream order.
  orderedSinceFence = false;
  afterReducedPrecisionCublas = false;
}

RNN_EXPORT void rnn_cuda_lane_end(int64_t lane) {
  if (!activeLanes || !validLane(lane, "rnn_cuda_lane_end"))
    return;
  // Recorded even after a failure: the join waits for the lane's stream
  // as it is now (under capture, a forked stream that is not joined back
  // would fail the capture and leave the stream capturing).
  if ((lanesUsed & (1u << lane)) && activeLanes->streams[lane])
    check(cuEventRecord(activeLanes->done[lane], activeLanes->streams[lane]),
          "cuEventRecord");
  currentStream = callerStream;
  callWorkspace = callerWorkspace;
  workspaceBytesThisCall = callerWorkspaceBytes;
  orderedSinceFence = false;
  afterReducedPrecisionCublas = false;
}

RNN_EXPORT void rnn_cuda_lanes_join(void) {
  if (!activeLanes)
    return;
  LaneStreams &lanes = *activeLanes;
  currentStream = callerStream;
  callWorkspace = callerWorkspace;
  workspaceBytesThisCall = callerWorkspaceBytes;
  for (int lane = 0; lane < kMaxLanes; ++lane) {
    if (!(lanesUsed & (1u << lane)))
      continue;
    // Joined even after a failure: a capture must end with every stream
    // it forked joined back.
    check(cuStreamWaitEvent(callerStream, lanes.done[lane], 0),
          "cuStreamWaitEvent");
    if (laneWorkspaces[lane])
      check(cuMemFreeAsync(laneWorkspaces[lane], callerStream),
            "cuMemFreeAsync");
    laneWorkspaces[lane] = 0;
  }
  lanesUsed = 0;
  activeLanes = nullptr;
  orderedSinceFence = false;
}
