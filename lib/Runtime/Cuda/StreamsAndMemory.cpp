//===- StreamsAndMemory.cpp - Streams, events and stream-ordered memory ---===//
//
// The mgpu* functions for streams, events, allocations, copies and fills.
// Every "stream" the generated code creates is the caller's stream, and
// waiting on it from generated code is free: the host never reads device
// data, so stream order suffices (CallState.h). Memory is allocated and
// freed in stream order.
//
//===----------------------------------------------------------------------===//

#include "rnn/Runtime/rnn_cuda_runtime.h"

#include "CallState.h"
#include "CudaErrors.h"
#include "StreamLanes.h"

using namespace rnn::cuda;

RNN_EXPORT void *mgpuStreamCreate() {
  ensureContext();
  return currentStream;
}

RNN_EXPORT void mgpuStreamDestroy(void *stream) {
  // The caller's stream and the lanes' (StreamLanes.h) are not the
  // generated code's to destroy.
  if (stream != currentStream && !isLaneStream(static_cast<CUstream>(stream)))
    check(cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy");
}

RNN_EXPORT void mgpuStreamSynchronize(void *stream) {
  // The caller's stream orders everything; see the file comment.
  if (stream != currentStream && !isLaneStream(static_cast<CUstream>(stream)))
    check(cuStreamSynchronize(static_cast<CUstream>(stream)),
          "cuStreamSynchronize");
}

RNN_EXPORT void mgpuStreamWaitEvent(void *stream, void *event) {
  check(cuStreamWaitEvent(static_cast<CUstream>(stream),
                          static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent");
}

RNN_EXPORT void *mgpuEventCreate() {
  CUevent event = nullptr;
  if (ensureContext())
    check(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return event;
}

RNN_EXPORT void mgpuEventDestroy(void *event) {
  if (event)
    check(cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy");
}

RNN_EXPORT void mgpuEventSynchronize(void *event) {
  check(cuEventSynchronize(static_cast<CUevent>(event)), "cuEventSynchronize");
}

RNN_EXPORT void mgpuEventRecord(void *event, void *stream) {
  check(
      cuEventRecord(static_cast<CUevent>(event), static_cast<CUstream>(stream)),
      "cuEventRecord");
}

RNN_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  if (bytes == 0 || callFailed() || !ensureContext())
    return nullptr;
  CUdeviceptr pointer = 0;
  std::string what =
      std::string(hostShared ? "cuMemAllocManaged" : "cuMemAllocAsync") +
      " of " + std::to_string(bytes) + " bytes";
  if (hostShared)
    check(cuMemAllocManaged(&pointer, bytes, CU_MEM_ATTACH_GLOBAL),
          what.c_str());
  else
    check(cuMemAllocAsync(&pointer, bytes, static_cast<CUstream>(stream)),
          what.c_str());
  return reinterpret_cast<void *>(pointer);
}

RNN_EXPORT void mgpuMemFree(void *pointer, void *stream) {
  if (pointer)
    check(cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(pointer),
                         static_cast<CUstream>(stream)),
          "cuMemFreeAsync");
}

namespace {

/// A copy or fill on the call's stream runs in stream order and is no GEMM.
/// One of zero bytes may enqueue nothing at all, so it changes neither.
void beforeCopyOrFill(size_t bytes) {
  if (bytes == 0)
    return;
  afterReducedPrecisionCublas = false;
  orderedSinceFence = true;
}

} // namespace

RNN_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (callFailed())
    return;
  beforeCopyOrFill(bytes);
  check(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                      reinterpret_cast<CUdeviceptr>(src), bytes,
                      static_cast<CUstream>(stream)),
        "cuMemcpyAsync");
}

RNN_EXPORT void mgpuMemset32(void *dst, uint32_t value, size_t count,
                             void *stream) {
  if (callFailed())
    return;
  beforeCopyOrFill(count * sizeof(uint32_t));
  check(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         static_cast<CUstream>(stream)),
        "cuMemsetD32Async");
}

RNN_EXPORT void mgpuMemset16(void *dst, int16_t value, size_t count,
                             void *stream) {
  if (callFailed())
    return;
  beforeCopyOrFill(count * sizeof(int16_t));
  check(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst),
                         static_cast<unsigned short>(value), count,
                         static_cast<CUstream>(stream)),
        "cuMemsetD16Async");
}
