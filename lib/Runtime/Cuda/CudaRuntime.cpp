//===- CudaRuntime.cpp - The GPU runtime ABI of compiled models -----------===//
//
// MLIR's GPU lowering calls mgpu* functions; this implements them on the CUDA
// driver API. Three choices matter:
//  * every "stream" the generated code creates is the caller's stream (set
//    per call by rnn_cuda_set_stream), and waiting on it from generated code
//    is free: the host never reads device data, so stream order suffices and
//    a model call never blocks the host;
//  * memory is stream-ordered (cuMemAllocAsync / cuMemFreeAsync), so the
//    per-step temporaries of a scan cost no synchronisation;
//  * errors never abort: the first one is recorded (per thread; module loads
//    at library load time globally) and librnn_runtime reports it.
//
//===----------------------------------------------------------------------===//

#include "rnn/Runtime/rnn_cuda_runtime.h"
#include "rnn/Runtime/rnn_runtime.h"

#include "CudaErrors.h"
#include "LtCandidates.h"
#include "PackedGemm.h"
#include "PreloadedPartialsGemm.h"
#include "SmallBatchGemv.h"

#include <cublas_v2.h>
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <vector>

#define RNN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

thread_local CUstream currentStream = nullptr;
thread_local std::string threadError;
std::mutex loadMutex;
std::string loadError; // Errors while loading kernels (any thread).

} // namespace

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

using rnn::cuda::check;
using rnn::cuda::record;

namespace {

int32_t defaultDevice = 0;

/// Makes the primary context of the device current on this thread.
bool ensureContext() {
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

} // namespace

//===----------------------------------------------------------------------===//
// Hooks for librnn_runtime
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Whole calls as CUDA graphs
//===----------------------------------------------------------------------===//

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

/// Whether the on/off setting `variable` is on (anything but "0"; unset is
/// on). The per-call settings below are read at every model call (not
/// cached for the process), so that a benchmark can compare both values in
/// one process; graphs captured under each are kept apart.
bool settingOn(const char *variable) {
  const char *value = getenv(variable);
  return !value || std::strcmp(value, "0") != 0;
}

/// The calling thread's settings for its current model call:
/// RNN_CUDA_OVERLAP_LAUNCHES=0 launches every kernel in stream order;
/// RNN_CUDA_PACKED_GEMM=0 keeps the GEMMs on weights too large for L2 off
/// the packed kernel (PackedGemm.h); RNN_CUDA_GEMV=0 runs GEMMs of few rows
/// on cuBLAS too (SmallBatchGemv.h); RNN_CUDA_PRELOADED_GEMM=0 runs the
/// K-split partials on cuBLAS too (PreloadedPartialsGemm.h);
/// RNN_CUDA_PERSISTENT=0 refuses every persistent kernel, so that the
/// recurrences run step by step (rnn_cuda_require_resident_next_launch);
/// RNN_CUDA_GRAPHS=0 runs every call directly, kernel by kernel.
thread_local bool graphsThisCall = true;
thread_local bool overlapThisCall = true;
thread_local bool packedThisCall = true;
thread_local bool gemvThisCall = true;
thread_local bool preloadedThisCall = true;
thread_local bool persistentThisCall = true;

/// The cuBLAS workspace of a model call. Without one of our own, cuBLAS
/// (12.2 and later) allocates the workspace of a split-K GEMM from the
/// stream-ordered pool around the GEMM: cheap in a direct call, but a
/// captured step then holds an allocation node before and a free node after
/// each such GEMM, and the next kernel cannot launch early behind it. A
/// workspace per call, allocated stream-ordered at its start and freed at
/// its end, gives one node of each per graph and is never shared between
/// streams. Its size also decides which algorithms cuBLAS's heuristic may
/// pick, and on the H100 no size is best for every model (docs/cuda.md):
/// graphs try each of kTunedWorkspacesMiB (0: cuBLAS's own), with and
/// without early launch (which also helps one model and slows another), and
/// keep the first, in that order of preference, within kTuningTolerance of
/// the fastest. Direct calls, and graphs that are not tuned, leave the
/// workspace to cuBLAS.
/// RNN_CUDA_CUBLAS_WORKSPACE_MIB=N pins it (0: cuBLAS's own).
constexpr size_t kTunedWorkspacesMiB[] = {0, 4, 32};
constexpr float kTuningTolerance = 1.01f;
/// The pinned size in bytes, or -1 when unset (or not a number).
long long pinnedCublasWorkspaceBytes() {
  const char *value = getenv("RNN_CUDA_CUBLAS_WORKSPACE_MIB");
  if (!value || !*value)
    return -1;
  char *end = nullptr;
  long long mib = std::strtoll(value, &end, 10);
  // Up to 1 TiB: a larger value is no size a GPU has (and would overflow).
  return *end == '\0' && mib >= 0 && mib <= (1 << 20) ? mib << 20 : -1;
}
thread_local long long pinnedWorkspaceThisCall = -1;

/// The algorithm of a captured call's per-step GEMMs (RNN_GEMM_PER_STEP and
/// the K-split partials): cuBLAS's own pick, or one of the first
/// kLtCandidates of cuBLASLt's heuristic (LtCandidates.h), tuned per graph
/// after the workspace. RNN_CUDA_GEMM_CANDIDATE=K pins candidate K, -1
/// cuBLAS's pick. Returns the pinned value, or kTunedCandidate when unset
/// (or not a number from -1 to kLtCandidates - 1).
constexpr int kTunedCandidate = -2;
int pinnedGemmCandidate() {
  const char *value = getenv("RNN_CUDA_GEMM_CANDIDATE");
  if (!value || !*value)
    return kTunedCandidate;
  char *end = nullptr;
  long candidate = std::strtol(value, &end, 10);
  return *end == '\0' && candidate >= -1 && candidate < rnn::cuda::kLtCandidates
             ? static_cast<int>(candidate)
             : kTunedCandidate;
}
thread_local int pinnedCandidateThisCall = kTunedCandidate;
/// The candidate of the current call's (or capture's) per-step GEMMs; -1:
/// cuBLAS's own pick. Direct calls keep cuBLAS's pick unless pinned.
thread_local int gemmCandidateThisCall = -1;
/// GEMMs issued on a cuBLASLt candidate since the counter was last reset:
/// a capture that issued none is the same as with cuBLAS's own pick.
thread_local int ltGemmsIssued = 0;
thread_local size_t workspaceBytesThisCall = 0;
/// The current call's workspace (0 outside a model call).
thread_local CUdeviceptr callWorkspace = 0;

/// Whether the last work issued on this thread in this model call is a GEMM
/// that cuBLAS ran with bf16 or f16 data (rnn_cuda_overlap_next_launch);
/// every launch, copy, fill and GEMM updates it.
thread_local bool afterReducedPrecisionCublas = false;

/// Whether this model call has issued work in plain stream order (a cuBLAS
/// GEMM, a copy or fill, a kernel launched without programmatic dependent
/// launch) since it started, or since rnn_cuda_order_next_launch. Such work
/// starts only once everything before it on the stream has completed, so
/// from then on nothing issued before that point still runs. Until then,
/// the grids that read memory before they wait for the grid ahead (the
/// preloaded partials GEMM and the GEMV read their weights, kernels in time
/// loops the buffers the loop does not write: overlap-kernel-launches) are
/// launched in stream order themselves: launched early right behind a
/// kernel of ours that let them launch while it waited for whatever wrote
/// those buffers, they could read them too soon.
thread_local bool orderedSinceFence = false;

/// Whether this thread is capturing a call.
thread_local bool capturingThisThread = false;
/// Whether cuBLAS has run a GEMM on this thread outside a capture: its
/// handle exists and has done its one-time set-up, so that a call can be
/// captured the first time it is made.
thread_local bool cublasWarmThisThread = false;

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

/// RNN_CUDA_GRAPH_DOT=DIR writes every captured graph to DIR/graph-N.dot
/// (cuGraphDebugDotPrint, verbose) and a line "DIR/graph-N.dot KEY" to
/// DIR/graphs.txt, with a line per tuning's timings: the nodes a call really
/// consists of, for finding where the time between kernels goes. The
/// directory, or null when the setting is off.
const char *graphDumpDir() {
  const char *dir = getenv("RNN_CUDA_GRAPH_DOT");
  return dir && *dir ? dir : nullptr;
}

/// Appends `line` to DIR/graphs.txt.
void appendGraphLog(const char *dir, const std::string &line) {
  if (FILE *log = std::fopen((std::string(dir) + "/graphs.txt").c_str(), "a")) {
    std::fprintf(log, "%s\n", line.c_str());
    std::fclose(log);
  }
}

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
  pinnedWorkspaceThisCall = pinnedCublasWorkspaceBytes();
  pinnedCandidateThisCall = pinnedGemmCandidate();
  gemmCandidateThisCall = std::max(pinnedCandidateThisCall, -1);
  workspaceBytesThisCall = pinnedWorkspaceThisCall >= 0
                               ? static_cast<size_t>(pinnedWorkspaceThisCall)
                               : 0;
  afterReducedPrecisionCublas = false;
  orderedSinceFence = false;
}

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

/// One call captured on `stream` with a cuBLAS workspace of
/// `workspaceBytes`, instantiated; null on failure (recorded). `label` names
/// it in RNN_CUDA_GRAPH_DOT's log.
CUgraphExec captureCall(CUstream stream, void (*call)(void **),
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

/// Timed replays per variant when tuning: one to warm up, then this many in
/// alternation (the median counts); calls slower than kTuningMaxCallMs are
/// not tuned (the replays would cost too much).
constexpr int kTuningRounds = 5;
constexpr float kTuningMaxCallMs = 20;

/// One captured graph of a call and its timed replays.
struct Variant {
  bool overlap;
  size_t mib;
  int candidate; // cuBLASLt candidate of the per-step GEMMs (-1: cuBLAS's).
  CUgraphExec exec;
  std::vector<float> ms;
};

float medianMs(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0f : ms[ms.size() / 2];
}

/// Replays `variants` in alternation: one round to warm up, then
/// kTuningRounds timed ones. False when a replay failed (recorded) or the
/// first replay of one took longer than kTuningMaxCallMs (then not all have
/// kTuningRounds times).
bool timeInAlternation(CUstream stream,
                       const std::vector<Variant *> &variants) {
  CUevent start = nullptr, end = nullptr;
  bool timed =
      check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate") &&
      check(cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate");
  bool complete = timed;
  for (int round = 0; timed && complete && round <= kTuningRounds; ++round) {
    for (Variant *v : variants) {
      float ms = 0;
      timed = check(cuEventRecord(start, stream), "cuEventRecord") &&
              check(cuGraphLaunch(v->exec, stream), "cuGraphLaunch") &&
              check(cuEventRecord(end, stream), "cuEventRecord") &&
              check(cuEventSynchronize(end), "cuEventSynchronize") &&
              check(cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
      if (!timed)
        break;
      if (round == 0 && ms > kTuningMaxCallMs) {
        complete = false; // A slow call: no more replays.
        break;
      }
      if (round > 0)
        v->ms.push_back(ms);
    }
  }
  if (start)
    cuEventDestroy(start);
  if (end)
    cuEventDestroy(end);
  return timed && complete;
}

/// The first of `variants` (in their order of preference) whose median is
/// within kTuningTolerance of the fastest.
Variant *firstAboutAsFast(const std::vector<Variant *> &variants) {
  float fastest = medianMs(variants.front()->ms);
  for (Variant *v : variants)
    fastest = std::min(fastest, medianMs(v->ms));
  return *std::find_if(variants.begin(), variants.end(), [&](Variant *v) {
    return medianMs(v->ms) <= fastest * kTuningTolerance;
  });
}

/// The call captured once per workspace size of kTunedWorkspacesMiB, with
/// kernels launched early (unless RNN_CUDA_OVERLAP_LAUNCHES=0) and in plain
/// stream order, each replayed in alternation; then, unless the candidate is
/// pinned, the best of these captured again with the per-step GEMMs on each
/// of cuBLASLt's first kLtCandidates candidates and replayed in alternation
/// with it. The one kept is replayed last by the caller (so the outputs are
/// its own). A call is a function of its arguments, so replays only repeat
/// its work. Null on failure (recorded).
CUgraphExec tunedCall(CUstream stream, void (*call)(void **),
                      void **descriptors, const std::string &label) {
  std::vector<Variant> variants;
  // Filled in the order of preference below; never reallocated after.
  variants.reserve(2 * std::size(kTunedWorkspacesMiB) +
                   rnn::cuda::kLtCandidates);
  auto destroyAllBut = [&](CUgraphExec kept) {
    for (Variant &v : variants)
      if (v.exec != kept)
        cuGraphExecDestroy(v.exec);
  };
  auto capture = [&](bool overlap, size_t mib, int candidate) {
    overlapThisCall = overlap;
    gemmCandidateThisCall = candidate;
    ltGemmsIssued = 0;
    CUgraphExec exec = captureCall(stream, call, descriptors, mib << 20, label);
    if (exec)
      variants.push_back({overlap, mib, candidate, exec, {}});
    return exec != nullptr;
  };
  // First early launch (unless turned off) and the workspace size, in the
  // order of preference: early launch, then the smaller workspace.
  const bool overlapAllowed = overlapThisCall;
  const int pinnedCandidate = gemmCandidateThisCall;
  bool captured = true;
  for (bool overlap : {true, false})
    for (size_t mib : kTunedWorkspacesMiB)
      if (captured && (overlapAllowed || !overlap))
        captured = capture(overlap, mib, pinnedCandidate);
  if (!captured) {
    overlapThisCall = overlapAllowed;
    gemmCandidateThisCall = pinnedCandidate;
    destroyAllBut(nullptr);
    return nullptr;
  }
  std::vector<Variant *> first;
  for (Variant &v : variants)
    first.push_back(&v);
  // Unless every variant was timed (no failure, not a slow call), the first
  // variant (early launch where allowed, cuBLAS's own workspace); else the
  // first in the order of preference that is about as fast as the fastest
  // (a workspace's memory is the call's for its duration).
  Variant *best = &variants.front();
  bool timed = timeInAlternation(stream, first);
  if (timed)
    best = firstAboutAsFast(first);
  // Then the per-step GEMMs' algorithm, cuBLAS's own pick preferred.
  // A candidate that fails to capture (cuBLASLt refusing its algorithm)
  // ends this stage without failing the call: its error is dropped and the
  // graphs captured so far compete.
  std::vector<Variant *> second{best};
  if (timed && pinnedCandidateThisCall == kTunedCandidate) {
    for (int candidate = 0; candidate < rnn::cuda::kLtCandidates; ++candidate) {
      if (!capture(best->overlap, best->mib, candidate)) {
        threadError.clear();
        break;
      }
      // No per-step GEMM had this candidate (nor will it have the next):
      // the graph is the one with cuBLAS's pick.
      if (ltGemmsIssued == 0) {
        cuGraphExecDestroy(variants.back().exec);
        variants.pop_back();
        break;
      }
      second.push_back(&variants.back());
    }
    if (second.size() > 1) {
      best->ms.clear();
      if (timeInAlternation(stream, second))
        best = firstAboutAsFast(second);
    }
  }
  overlapThisCall = overlapAllowed;
  gemmCandidateThisCall = pinnedCandidate;
  workspaceBytesThisCall = 0;
  if (const char *dir = graphDumpDir()) {
    auto describe = [](const Variant &v) {
      std::string text = v.overlap ? "early launch" : "stream order";
      text += ", workspace " + std::to_string(v.mib) + " MiB";
      if (v.candidate >= 0)
        text += ", per-step GEMMs on cuBLASLt candidate " +
                std::to_string(v.candidate);
      return text;
    };
    std::string line = "tuned " + label + ":";
    for (Variant &v : variants) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), " %.4f ms;", medianMs(v.ms));
      line += " " + describe(v) + ms;
    }
    appendGraphLog(dir, line + " kept " + describe(*best));
  }
  CUgraphExec kept = best->exec;
  destroyAllBut(kept);
  // The other variants' graph memory goes back to the device.
  CUdevice device;
  if (cuCtxGetDevice(&device) == CUDA_SUCCESS)
    cuDeviceGraphMemTrim(device);
  if (!threadError.empty()) {
    cuGraphExecDestroy(kept);
    return nullptr;
  }
  return kept;
}

} // namespace

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

//===----------------------------------------------------------------------===//
// MLIR's GPU runtime ABI
//===----------------------------------------------------------------------===//

RNN_EXPORT void *mgpuModuleLoad(void *data, size_t /*size*/) {
  // Runs from the model library's constructor: remember a failure for the
  // first call instead of failing the load.
  std::string saved;
  saved.swap(threadError);
  CUmodule module = nullptr;
  if (ensureContext())
    check(cuModuleLoadData(&module, data), "cuModuleLoadData");
  if (!threadError.empty()) {
    std::lock_guard<std::mutex> lock(loadMutex);
    if (loadError.empty())
      loadError = threadError;
  }
  threadError.swap(saved);
  return module;
}

RNN_EXPORT void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  return mgpuModuleLoad(data, 0);
}

RNN_EXPORT void mgpuModuleUnload(void *module) {
  if (module)
    cuModuleUnload(static_cast<CUmodule>(module));
}

RNN_EXPORT void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module) {
    record(std::string("kernel ") + name + " is not loaded");
    return nullptr;
  }
  CUfunction function = nullptr;
  check(cuModuleGetFunction(&function, static_cast<CUmodule>(module), name),
        "cuModuleGetFunction");
  return function;
}

namespace {

/// cuLaunchKernelEx's configuration of a launch, without attributes.
CUlaunchConfig launchConfig(intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                            intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                            int32_t sharedBytes, void *stream) {
  CUlaunchConfig config = {};
  config.gridDimX = gridX;
  config.gridDimY = gridY;
  config.gridDimZ = gridZ;
  config.blockDimX = blockX;
  config.blockDimY = blockY;
  config.blockDimZ = blockZ;
  config.sharedMemBytes = sharedBytes;
  config.hStream = static_cast<CUstream>(stream);
  return config;
}

/// Set by rnn_cuda_overlap_next_launch, consumed by the next launch.
thread_local bool overlapNextLaunch = false;

} // namespace

RNN_EXPORT void rnn_cuda_order_next_launch() {
  // The next grid that could launch early waits in stream order instead.
  orderedSinceFence = false;
}

RNN_EXPORT void rnn_cuda_overlap_next_launch() {
  // cuBLAS's bf16/f16 GEMMs on sm_90 let the next grid become resident
  // while they run; our kernels then sat on the GEMM's SMs and made the
  // steps of bf16 models 2-7% slower (measured on the H100,
  // docs/performance-notes.md), where after f32/TF32 GEMMs and our own kernels
  // early launch gains.
  overlapNextLaunch = overlapThisCall && !afterReducedPrecisionCublas;
}

RNN_EXPORT void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX,
                                 intptr_t blockY, intptr_t blockZ,
                                 int32_t sharedBytes, void *stream,
                                 void **params, void **extra,
                                 size_t /*paramsCount*/) {
  // Our kernels in time loops may read before they wait (orderedSinceFence).
  bool overlap = overlapNextLaunch && orderedSinceFence;
  overlapNextLaunch = false;
  afterReducedPrecisionCublas = false;
  if (!function)
    return; // The missing kernel was recorded.
  if (!overlap) {
    orderedSinceFence = true;
    check(cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY, gridZ,
                         blockX, blockY, blockZ, sharedBytes,
                         static_cast<CUstream>(stream), params, extra),
          "cuLaunchKernel");
    return;
  }
  // The kernel waits for the grids ahead of it (griddepcontrol.wait) before
  // it touches memory, so it may be scheduled while they drain. Stream
  // capture turns the attribute into a programmatic edge of the graph.
  CUlaunchAttribute attribute = {};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config = launchConfig(gridX, gridY, gridZ, blockX, blockY,
                                       blockZ, sharedBytes, stream);
  config.attrs = &attribute;
  config.numAttrs = 1;
  check(cuLaunchKernelEx(&config, static_cast<CUfunction>(function), params,
                         extra),
        "cuLaunchKernelEx");
}

namespace {

/// Set by rnn_cuda_require_resident_next_launch, consumed by the next
/// cluster launch; the refusal is kept until rnn_cuda_take_refused_launch.
thread_local bool residentNextLaunch = false;
thread_local bool refusedLaunch = false;

/// Whether all of `config`'s grid, in clusters of `clusterBlocks` blocks,
/// can be resident at once on the current device.
bool allResident(CUfunction function, const CUlaunchConfig &config,
                 unsigned long long clusterBlocks) {
  int clusters = 0;
  if (cuOccupancyMaxActiveClusters(&clusters, function, &config) !=
      CUDA_SUCCESS)
    return false;
  unsigned long long blocks = static_cast<unsigned long long>(config.gridDimX) *
                              config.gridDimY * config.gridDimZ;
  return clusters * clusterBlocks >= blocks;
}

} // namespace

RNN_EXPORT void rnn_cuda_require_resident_next_launch() {
  residentNextLaunch = true;
  refusedLaunch = false;
}

RNN_EXPORT int32_t rnn_cuda_take_refused_launch() {
  bool refused = refusedLaunch;
  refusedLaunch = false;
  return refused ? 1 : 0;
}

RNN_EXPORT void
mgpuLaunchClusterKernel(void *function, intptr_t clusterX, intptr_t clusterY,
                        intptr_t clusterZ, intptr_t gridX, intptr_t gridY,
                        intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                        intptr_t blockZ, int32_t sharedBytes, void *stream,
                        void **params, void **extra, size_t /*paramsCount*/) {
  bool resident = residentNextLaunch;
  residentNextLaunch = false;
  overlapNextLaunch = false;
  afterReducedPrecisionCublas = false;
  auto refuse = [&] {
    if (resident)
      refusedLaunch = true;
  };
  if (!function)
    return refuse(); // The missing kernel was recorded.
  if (resident && !persistentThisCall)
    return refuse();
  auto kernel = static_cast<CUfunction>(function);
  // Above 48 KiB, dynamic shared memory is opt-in per function; a GPU with
  // less than the kernel asks for runs the fallback.
  CUresult optIn = cuFuncSetAttribute(
      kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, sharedBytes);
  if (optIn != CUDA_SUCCESS) {
    if (!resident)
      check(optIn, "cuFuncSetAttribute");
    return refuse();
  }
  CUlaunchAttribute attributes[2] = {};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attributes[0].value.clusterDim.x = clusterX;
  attributes[0].value.clusterDim.y = clusterY;
  attributes[0].value.clusterDim.z = clusterZ;
  // A cooperative launch: the driver starts the grid only when all its
  // blocks can be resident together, also beside other grids (two
  // persistent kernels on two streams never hold part of the GPU each).
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attributes[1].value.cooperative = 1;
  CUlaunchConfig config = launchConfig(gridX, gridY, gridZ, blockX, blockY,
                                       blockZ, sharedBytes, stream);
  config.attrs = attributes;
  config.numAttrs = resident ? 2 : 1;
  // A kernel whose blocks wait for each other must have all of them on the
  // GPU at once, or it never finishes: the caller runs its fallback instead
  // (a GPU with fewer SMs, less shared memory, or no room for the clusters).
  if (resident && !allResident(kernel, config, clusterX * clusterY * clusterZ))
    return refuse();
  orderedSinceFence = true;
  if (!check(cuLaunchKernelEx(&config, kernel, params, extra),
             "cuLaunchKernelEx"))
    refuse();
}

RNN_EXPORT void *mgpuStreamCreate() {
  ensureContext();
  return currentStream;
}

RNN_EXPORT void mgpuStreamDestroy(void *stream) {
  if (stream != currentStream)
    check(cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy");
}

RNN_EXPORT void mgpuStreamSynchronize(void *stream) {
  // The caller's stream orders everything; see the file comment.
  if (stream != currentStream)
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
  if (bytes == 0 || !ensureContext())
    return nullptr;
  CUdeviceptr pointer = 0;
  if (hostShared)
    check(cuMemAllocManaged(&pointer, bytes, CU_MEM_ATTACH_GLOBAL),
          "cuMemAllocManaged");
  else
    check(cuMemAllocAsync(&pointer, bytes, static_cast<CUstream>(stream)),
          "cuMemAllocAsync");
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
  beforeCopyOrFill(bytes);
  check(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                      reinterpret_cast<CUdeviceptr>(src), bytes,
                      static_cast<CUstream>(stream)),
        "cuMemcpyAsync");
}

RNN_EXPORT void mgpuMemset32(void *dst, uint32_t value, size_t count,
                             void *stream) {
  beforeCopyOrFill(count * sizeof(uint32_t));
  check(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         static_cast<CUstream>(stream)),
        "cuMemsetD32Async");
}

RNN_EXPORT void mgpuMemset16(void *dst, int16_t value, size_t count,
                             void *stream) {
  beforeCopyOrFill(count * sizeof(int16_t));
  check(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst),
                         static_cast<unsigned short>(value), count,
                         static_cast<CUstream>(stream)),
        "cuMemsetD16Async");
}

RNN_EXPORT void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

//===----------------------------------------------------------------------===//
// GEMM on cuBLAS
//===----------------------------------------------------------------------===//

namespace {

cudaDataType cublasType(int32_t dtype) {
  switch (dtype) {
  case 0:
    return CUDA_R_32F;
  case 1:
    return CUDA_R_64F;
  case 2:
    return CUDA_R_16BF;
  default:
    return CUDA_R_16F;
  }
}

/// One handle per thread, created on first use (cuBLAS handles are not
/// thread-safe; streams are set per call).
cublasHandle_t threadHandle() {
  struct Handle {
    cublasHandle_t handle = nullptr;
    ~Handle() {
      if (handle)
        cublasDestroy(handle);
    }
  };
  thread_local Handle holder;
  if (!holder.handle && cublasCreate(&holder.handle) != CUBLAS_STATUS_SUCCESS)
    holder.handle = nullptr;
  return holder.handle;
}

/// The thread's handle on the current stream with the call's workspace, or
/// null (recorded), for a GEMM of these dtypes; the next launch learns
/// whether it follows a GEMM that cuBLAS ran with bf16/f16 data.
cublasHandle_t cublasForNextGemm(int32_t abDtype, int32_t cDtype) {
  afterReducedPrecisionCublas = abDtype == RNN_BF16 || abDtype == RNN_F16 ||
                                cDtype == RNN_BF16 || cDtype == RNN_F16;
  orderedSinceFence = true; // cuBLAS's kernels launch in stream order.
  cublasHandle_t handle = threadHandle();
  if (!handle) {
    record("cublasCreate failed");
    return nullptr;
  }
  if (!capturingThisThread)
    cublasWarmThisThread = true;
  // Setting the stream resets the handle's workspace to cuBLAS's own.
  cublasSetStream(handle, currentStream);
  if (callWorkspace)
    cublasSetWorkspace(handle, reinterpret_cast<void *>(callWorkspace),
                       workspaceBytesThisCall);
  return handle;
}

/// cuBLAS's compute type and scalars (alpha = 1, beta = 0 or 1) for
/// operands of `abDtype`: f64 computes in f64, f32 in TF32 where allowed.
struct CublasScalars {
  CublasScalars(int32_t abDtype, bool tf32, bool accumulate)
      : f64(abDtype == RNN_F64),
        compute(f64 ? CUBLAS_COMPUTE_64F
                    : (tf32 && abDtype == RNN_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                  : CUBLAS_COMPUTE_32F)),
        beta64(accumulate ? 1.0 : 0.0), beta32(accumulate ? 1.0f : 0.0f) {}
  const void *alpha() const {
    return f64 ? static_cast<const void *>(&alpha64)
               : static_cast<const void *>(&alpha32);
  }
  const void *beta() const {
    return f64 ? static_cast<const void *>(&beta64)
               : static_cast<const void *>(&beta32);
  }
  bool f64;
  cublasComputeType_t compute;
  double alpha64 = 1.0, beta64;
  float alpha32 = 1.0f, beta32;
};

/// Issues `gemm` with the call's handle: a per-step product on the call's
/// cuBLASLt candidate (with the call's workspace) where its problem has one,
/// otherwise on cuBLAS's own pick (strided-batched for a batch). A failure
/// is recorded with the product's shape in the entry point's terms.
void issueGemm(cublasHandle_t handle, const rnn::cuda::LtGemm &gemm,
               bool perStep) {
  auto shape = [&] {
    return " (m=" + std::to_string(gemm.cols) +
           ", n=" + std::to_string(gemm.rows) +
           ", k=" + std::to_string(gemm.depth * gemm.batch) +
           (gemm.batch > 1 ? ", slices=" + std::to_string(gemm.batch) : "") +
           ")";
  };
  if (perStep && gemmCandidateThisCall >= 0 &&
      gemm.compute != CUBLAS_COMPUTE_64F) {
    cublasStatus_t status = rnn::cuda::runLtCandidate(
        gemm, gemmCandidateThisCall, reinterpret_cast<void *>(callWorkspace),
        callWorkspace ? workspaceBytesThisCall : 0, currentStream);
    if (status == CUBLAS_STATUS_SUCCESS) {
      ++ltGemmsIssued;
      return;
    }
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) {
      record(std::string("cublasLtMatmul failed: ") +
             cublasGetStatusString(status) + shape() + ", candidate " +
             std::to_string(gemmCandidateThisCall));
      return;
    }
  }
  cublasStatus_t status =
      gemm.batch > 1
          ? cublasGemmStridedBatchedEx(
                handle, gemm.transA, CUBLAS_OP_N, gemm.rows, gemm.cols,
                gemm.depth, gemm.alpha, gemm.a, gemm.abType, gemm.lda,
                gemm.strideA, gemm.b, gemm.abType, gemm.ldb, gemm.strideB,
                gemm.beta, gemm.c, gemm.cType, gemm.ldc, gemm.strideC,
                gemm.batch, gemm.compute, CUBLAS_GEMM_DEFAULT)
          : cublasGemmEx(handle, gemm.transA, CUBLAS_OP_N, gemm.rows, gemm.cols,
                         gemm.depth, gemm.alpha, gemm.a, gemm.abType, gemm.lda,
                         gemm.b, gemm.abType, gemm.ldb, gemm.beta, gemm.c,
                         gemm.cType, gemm.ldc, gemm.compute,
                         CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    record(std::string(gemm.batch > 1 ? "cublasGemmStridedBatchedEx"
                                      : "cublasGemmEx") +
           " failed: " + cublasGetStatusString(status) + shape());
}
} // namespace

RNN_EXPORT void rnn_cuda_gemm(int32_t abDtype, int32_t cDtype, int32_t flags,
                              int64_t m, int64_t n, int64_t k, int64_t a,
                              int64_t lda, int64_t b, int64_t ldb, int64_t c,
                              int64_t ldc) {
  // Whether this GEMM may launch early (our GEMV does) right after the work
  // ahead of it; then the flag describes this GEMM.
  bool overlap = overlapThisCall && !afterReducedPrecisionCublas;
  afterReducedPrecisionCublas = false;
  if (m == 0 || n == 0)
    return;
  // Row-major C = A·op(B) is column-major Cᵀ = op(B)ᵀ·Aᵀ: swap the operands
  // and read each row-major buffer as its column-major transpose.
  bool bIsNK = (flags & 1) == 0;
  bool tf32 = (flags & 2) != 0;
  bool accumulate = (flags & 4) != 0;
  bool constantB = (flags & 8) != 0;
  if (constantB && tf32 && bIsNK && abDtype == 0 && cDtype == 0 &&
      rnn::cuda::tryPackedGemm(m, n, k, a, lda, b, ldb, c, ldc, accumulate,
                               currentStream)) {
    orderedSinceFence = true; // Launched in stream order.
    return;
  }
  // The GEMV reads its weights before it waits (orderedSinceFence).
  bool early = overlap && orderedSinceFence;
  if (gemvThisCall && bIsNK && cDtype == RNN_F32 &&
      rnn::cuda::trySmallBatchGemv(abDtype, m, n, k, a, lda, b, ldb, c, ldc,
                                   accumulate, early, currentStream)) {
    orderedSinceFence = orderedSinceFence || !early;
    return;
  }
  cublasHandle_t handle = cublasForNextGemm(abDtype, cDtype);
  if (!handle)
    return;
  CublasScalars scalars(abDtype, tf32, accumulate);
  rnn::cuda::LtGemm gemm = {cublasType(abDtype),
                            cublasType(cDtype),
                            scalars.compute,
                            bIsNK ? CUBLAS_OP_T : CUBLAS_OP_N,
                            n,
                            m,
                            k,
                            reinterpret_cast<const void *>(b),
                            ldb,
                            0,
                            reinterpret_cast<const void *>(a),
                            lda,
                            0,
                            reinterpret_cast<void *>(c),
                            ldc,
                            0,
                            1,
                            scalars.alpha(),
                            scalars.beta()};
  issueGemm(handle, gemm, (flags & RNN_GEMM_PER_STEP) != 0);
}

RNN_EXPORT void rnn_cuda_gemm_partials(int32_t abDtype, int32_t cDtype,
                                       int32_t flags, int64_t slices, int64_t m,
                                       int64_t n, int64_t k, int64_t a,
                                       int64_t lda, int64_t b, int64_t ldb,
                                       int64_t c, int64_t ldc) {
  // Partial s = A[:, s·k/S ..] · B[:, s·k/S ..]ᵀ into C + s·m·ldc, summed by
  // the kernel that reads them (convert-matmul-to-library-gemm{k-partials}):
  // our preloaded GEMM where it applies, else one strided-batched GEMM over
  // the K slices.
  bool overlap = overlapThisCall && !afterReducedPrecisionCublas;
  afterReducedPrecisionCublas = false;
  if (m == 0 || n == 0)
    return;
  if (slices < 1 || k % slices != 0 || (flags & 1) != 0 || (flags & 4) != 0) {
    record("rnn_cuda_gemm_partials: " + std::to_string(slices) +
           " slices of k=" + std::to_string(k) + " (flags " +
           std::to_string(flags) + ") are not supported");
    return;
  }
  bool tf32 = (flags & 2) != 0, constantB = (flags & RNN_GEMM_B_CONSTANT) != 0;
  // Launched early only behind work ordered after the last fence
  // (orderedSinceFence).
  bool early = overlap && orderedSinceFence;
  if (preloadedThisCall && tf32 && constantB && abDtype == RNN_F32 &&
      cDtype == RNN_F32 &&
      rnn::cuda::tryPreloadedPartialsGemm(slices, m, n, k, a, lda, b, ldb, c,
                                          ldc, early, currentStream)) {
    orderedSinceFence = orderedSinceFence || !early;
    return;
  }
  cublasHandle_t handle = cublasForNextGemm(abDtype, cDtype);
  if (!handle)
    return;
  CublasScalars scalars(abDtype, tf32, /*accumulate=*/false);
  int64_t slice = k / slices;
  rnn::cuda::LtGemm gemm = {cublasType(abDtype),
                            cublasType(cDtype),
                            scalars.compute,
                            CUBLAS_OP_T,
                            n,
                            m,
                            slice,
                            reinterpret_cast<const void *>(b),
                            ldb,
                            slice,
                            reinterpret_cast<const void *>(a),
                            lda,
                            slice,
                            reinterpret_cast<void *>(c),
                            ldc,
                            m * ldc,
                            static_cast<int32_t>(slices),
                            scalars.alpha(),
                            scalars.beta()};
  issueGemm(handle, gemm, (flags & RNN_GEMM_PER_STEP) != 0);
}
