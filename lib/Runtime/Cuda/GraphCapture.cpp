//===- GraphCapture.cpp - Whole calls as CUDA graphs ----------------------===//
//
// rnn_cuda_call captures a model call into a CUDA graph the first time it
// is made with new buffers or shapes (tuned while captured, GraphTuning.cpp)
// and replays it later with one launch. Here: the graphs kept, most
// recently used first; the stream of the runtime's on which calls on the
// legacy default stream are captured and replayed; RNN_CUDA_GRAPH_DOT's
// dumps; and running one call directly or into a capture.
//
//===----------------------------------------------------------------------===//

#include "GraphCapture.h"

#include "rnn/Runtime/rnn_cuda_runtime.h"

#include "CallState.h"
#include "CudaErrors.h"
#include "PackedGemm.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <string>
#include <vector>

using namespace rnn::cuda;

namespace {

/// A call's graph, for one function and one set of buffers and shapes.
struct CallGraph {
  std::string key;
  int calls = 0;
  CUgraphExec exec = nullptr;
  /// A thread is capturing and tuning this call (without the mutex).
  bool capturing = false;
};

std::mutex graphMutex;
std::list<CallGraph> graphs; // Most recently used first.
constexpr size_t kMaxGraphs = 32;

/// Past kMaxGraphs, drops the least recently used graph that no thread is
/// capturing (graphMutex held).
void evictOldestGraph() {
  if (graphs.size() <= kMaxGraphs)
    return;
  for (auto it = graphs.end(); it != graphs.begin();) {
    --it;
    if (it->capturing)
      continue;
    if (it->exec)
      cuGraphExecDestroy(it->exec);
    graphs.erase(it);
    return;
  }
}

/// A stream of the runtime's, per thread and context, on which calls made on
/// the legacy default stream (which cannot be captured) are captured and
/// replayed, and the two events that order it after the work the caller
/// queued on the legacy stream before the call and the caller's later work
/// after the call. Released with the context.
struct LegacyStreamRoute {
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUevent before = nullptr;
  CUevent after = nullptr;
};
thread_local std::vector<LegacyStreamRoute> legacyStreamRoutes;

/// This thread's route for the current context; null on failure (recorded).
LegacyStreamRoute *legacyStreamRoute() {
  CUcontext context = nullptr;
  if (!check(cuCtxGetCurrent(&context), "cuCtxGetCurrent") || !context)
    return nullptr;
  for (LegacyStreamRoute &route : legacyStreamRoutes)
    if (route.context == context)
      return &route;
  LegacyStreamRoute route;
  route.context = context;
  if (!check(cuStreamCreate(&route.stream, CU_STREAM_NON_BLOCKING),
             "cuStreamCreate") ||
      !check(cuEventCreate(&route.before, CU_EVENT_DISABLE_TIMING),
             "cuEventCreate") ||
      !check(cuEventCreate(&route.after, CU_EVENT_DISABLE_TIMING),
             "cuEventCreate")) {
    if (route.before)
      cuEventDestroy(route.before);
    if (route.stream)
      cuStreamDestroy(route.stream);
    return nullptr;
  }
  legacyStreamRoutes.push_back(route);
  return &legacyStreamRoutes.back();
}

/// Where a call's graph is captured or replayed: on the caller's stream, or,
/// for a call on the legacy default stream (null or CU_STREAM_LEGACY), on
/// this thread's route stream for as long as the scope lives, which then
/// also becomes the stream the call's work is issued on. stream() is null
/// when the route could not be set up (recorded).
class GraphStreamScope {
public:
  explicit GraphStreamScope(CUstream caller) : caller(caller) {
    if (caller && caller != CU_STREAM_LEGACY) {
      target = caller;
      return;
    }
    route = legacyStreamRoute();
    if (route && check(cuEventRecord(route->before, caller), "cuEventRecord") &&
        check(cuStreamWaitEvent(route->stream, route->before, 0),
              "cuStreamWaitEvent")) {
      target = route->stream;
      currentStream = target;
    }
  }
  ~GraphStreamScope() {
    if (!route || !target)
      return;
    currentStream = caller;
    if (check(cuEventRecord(route->after, route->stream), "cuEventRecord"))
      check(cuStreamWaitEvent(caller, route->after, 0), "cuStreamWaitEvent");
  }
  GraphStreamScope(const GraphStreamScope &) = delete;
  GraphStreamScope &operator=(const GraphStreamScope &) = delete;
  CUstream stream() const { return target; }

private:
  CUstream caller;
  CUstream target = nullptr;
  LegacyStreamRoute *route = nullptr;
};

} // namespace

const char *rnn::cuda::graphDumpDir() {
  const char *dir = getenv("RNN_CUDA_GRAPH_DOT");
  return dir && *dir ? dir : nullptr;
}

void rnn::cuda::appendGraphLog(const char *dir, const std::string &line) {
  if (FILE *log = std::fopen((std::string(dir) + "/graphs.txt").c_str(), "a")) {
    std::fprintf(log, "%s\n", line.c_str());
    std::fclose(log);
  }
}

namespace {

void writeGraphDot(CUgraph graph, const std::string &key) {
  const char *dir = graphDumpDir();
  if (!dir)
    return;
  static std::atomic<int> written{0};
  std::string path =
      std::string(dir) + "/graph-" + std::to_string(written++) + ".dot";
  if (cuGraphDebugDotPrint(graph, path.c_str(),
                           CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE) != CUDA_SUCCESS) {
    record("RNN_CUDA_GRAPH_DOT: could not write " + path);
    return;
  }
  appendGraphLog(dir, path + " " + key);
}

} // namespace

RNN_EXPORT void rnn_cuda_release_graphs(const char *prefix, size_t size) {
  std::string start(prefix, size);
  std::lock_guard<std::mutex> lock(graphMutex);
  for (auto it = graphs.begin(); it != graphs.end();) {
    if (it->key.compare(0, start.size(), start) == 0) {
      if (it->exec)
        cuGraphExecDestroy(it->exec);
      it = graphs.erase(it);
    } else {
      ++it;
    }
  }
}

namespace {

/// Runs the model's function once; weights packed for its GEMMs live until
/// its end.
void runCall(void (*call)(void **), void **descriptors) {
  orderedSinceFence = false;
  rnn::cuda::beginPackedWeightsCall(packedThisCall);
  // Where the pool cannot give the workspace, cuBLAS falls back to its own.
  CUdeviceptr workspace = 0;
  if (workspaceBytesThisCall &&
      cuMemAllocAsync(&workspace, workspaceBytesThisCall, currentStream) !=
          CUDA_SUCCESS)
    workspace = 0;
  callWorkspace = workspace;
  call(descriptors);
  callWorkspace = 0;
  if (workspace)
    check(cuMemFreeAsync(workspace, currentStream), "cuMemFreeAsync");
  rnn::cuda::endPackedWeightsCall(currentStream);
}

} // namespace

CUgraphExec rnn::cuda::captureCall(CUstream stream, void (*call)(void **),
                                   void **descriptors, size_t workspaceBytes,
                                   const std::string &label) {
  workspaceBytesThisCall = workspaceBytes;
  if (!check(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
             "cuStreamBeginCapture"))
    return nullptr;
  capturingThisThread = true;
  runCall(call, descriptors);
  capturingThisThread = false;
  CUgraph graph = nullptr;
  bool captured =
      check(cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  if (!threadError.empty() || !captured) {
    if (graph)
      cuGraphDestroy(graph);
    return nullptr;
  }
  writeGraphDot(graph, label + " cublas-workspace-MiB=" +
                           std::to_string(workspaceBytes >> 20));
  CUgraphExec exec = nullptr;
  bool ready = check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  cuGraphDestroy(graph);
  return ready ? exec : nullptr;
}

RNN_EXPORT int32_t rnn_cuda_call(void *stream, void (*call)(void **),
                                 void **descriptors, const char *key,
                                 size_t keySize) {
  rnn_cuda_set_stream(stream);
  // A call issues one GEMM and a few kernels per time step; launched one by
  // one from the host, their launch cost dominates at small batch. A call
  // with new buffers or shapes is captured into a graph (below: the first
  // time, or the second while cuBLAS is not set up on this thread), and
  // later ones replay it with a single launch. The legacy default stream
  // cannot be captured: calls on it are captured and replayed on a stream of
  // ours, ordered by events (GraphStreamScope). On the H100 that took an
  // LSTM at `medium` from 2.72 ms, run kernel by kernel, to 1.15, as on a
  // stream of the caller's (2026-11-23, docs/performance-notes.md).
  if (!graphsThisCall) {
    runCall(call, descriptors);
    return threadError.empty() ? 0 : 1;
  }
  // The settings that change what a capture records are part of the key.
  std::string settings;
  if (!overlapThisCall)
    settings += "|no-overlap";
  if (!packedThisCall)
    settings += "|no-packed-gemm";
  if (!gemvThisCall)
    settings += "|no-gemv";
  if (!preloadedThisCall)
    settings += "|no-preloaded-gemm";
  if (!persistentThisCall)
    settings += "|no-persistent";
  if (!lanesThisCall)
    settings += "|no-lanes";
  if (!lowLatencyThisCall)
    settings += "|no-low-latency";
  if (batchTilesThisCall > 0)
    settings += "|batch-tiles=" + std::to_string(batchTilesThisCall);
  if (pinnedWorkspaceThisCall >= 0)
    settings +=
        "|cublas-workspace=" + std::to_string(workspaceBytesThisCall >> 20);
  if (pinnedCandidateThisCall != kTunedCandidate)
    settings += "|gemm-candidate=" + std::to_string(pinnedCandidateThisCall);
  std::string id = std::string(key, keySize) + settings;
  std::unique_lock<std::mutex> lock(graphMutex);
  auto it = graphs.begin();
  while (it != graphs.end() && it->key != id)
    ++it;
  if (it == graphs.end()) {
    graphs.push_front(CallGraph{id});
    it = graphs.begin();
    evictOldestGraph();
  } else {
    graphs.splice(graphs.begin(), graphs, it);
    it = graphs.begin();
  }
  CallGraph &entry = *it;
  if (entry.exec) {
    { // Under the lock: eviction may destroy the graph once it is released.
      GraphStreamScope scope(static_cast<CUstream>(stream));
      if (scope.stream())
        check(cuGraphLaunch(entry.exec, scope.stream()), "cuGraphLaunch");
    }
    return threadError.empty() ? 0 : 1;
  }
  // Another thread is capturing this very call: run it directly meanwhile.
  if (entry.capturing) {
    lock.unlock();
    runCall(call, descriptors);
    return threadError.empty() ? 0 : 1;
  }
  // Until cuBLAS has run on this thread, a call runs once directly before
  // it is captured (cuBLAS sets itself up on its first GEMM, which a
  // capture cannot record). After that, calls are captured the first time:
  // running a call directly on a second stream slowed every graph of the
  // process afterwards (the MGU's 1.29 -> 1.49 ms, H100; docs/cuda.md).
  if (!cublasWarmThisThread && entry.calls++ == 0) {
    lock.unlock();
    runCall(call, descriptors);
    return threadError.empty() ? 0 : 1;
  }
  // The key's text (librnn_runtime puts the model and the function first,
  // then the buffers' descriptors in binary) with the settings: the name of
  // the graph in RNN_CUDA_GRAPH_DOT's log.
  std::string label =
      std::string(key, std::find_if(key, key + keySize,
                                    [](char c) {
                                      return static_cast<unsigned char>(c) <
                                             0x20;
                                    })) +
      settings;
  // Capturing and tuning take up to ~10 captures and their timed replays:
  // other threads' calls go on meanwhile (captures are thread-local).
  entry.capturing = true;
  lock.unlock();
  {
    GraphStreamScope scope(static_cast<CUstream>(stream));
    CUstream cuStream = scope.stream();
    CUgraphExec exec = nullptr;
    if (cuStream)
      exec = pinnedWorkspaceThisCall >= 0
                 ? captureCall(cuStream, call, descriptors,
                               workspaceBytesThisCall, label)
                 : tunedCall(cuStream, call, descriptors, label);
    lock.lock();
    // Eviction skips the entry while it is captured; only
    // rnn_cuda_release_graphs (the model unloaded meanwhile) removes it.
    it = graphs.begin();
    while (it != graphs.end() && !(it->key == id && it->capturing))
      ++it;
    if (it != graphs.end())
      it->capturing = false;
    if (!exec)
      return 1;
    check(cuGraphLaunch(exec, cuStream), "cuGraphLaunch");
    if (it != graphs.end())
      it->exec = exec;
    else
      cuGraphExecDestroy(exec); // Freed once the launch completes.
  } // The caller's stream waits for the launch (GraphStreamScope).
  return threadError.empty() ? 0 : 1;
}
