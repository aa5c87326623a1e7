//===- CallState.h - What the CUDA runtime's files share --------*- C++ -*-===//
//
// MLIR's GPU lowering calls mgpu* functions; librnn_runtime_cuda implements
// them on the CUDA driver API. Three choices matter:
//  * every "stream" the generated code creates is the caller's stream (set
//    per call by rnn_cuda_set_stream), and waiting on it from generated code
//    is free: the host never reads device data, so stream order suffices and
//    a model call never blocks the host;
//  * memory is stream-ordered (cuMemAllocAsync / cuMemFreeAsync), so the
//    per-step temporaries of a scan cost no synchronisation;
//  * errors never abort: the first one is recorded (per thread; module loads
//    at library load time globally) and librnn_runtime reports it.
//
// Its files hold one concern each: CallState.cpp sets up a model call
// (stream, context, settings), CudaErrors.cpp records errors,
// GraphCapture.cpp and GraphTuning.cpp run whole calls as CUDA graphs,
// KernelLaunches.cpp loads and launches kernels, StreamsAndMemory.cpp holds
// streams, events and stream-ordered memory, and GemmDispatch.cpp sends
// GEMMs to the runtime's own kernels, cuBLAS or cuBLASLt. This header
// declares the state they share, all of it defined in CallState.cpp; what
// belongs to the calling thread's model call is thread_local.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_CALLSTATE_H
#define RNN_LIB_RUNTIME_CUDA_CALLSTATE_H

#include <cuda.h>

#include <cstddef>
#include <mutex>
#include <string>

/// The ABI's functions: C names, exported (the library hides all else).
#define RNN_EXPORT extern "C" __attribute__((visibility("default")))

// What follows is the library's own, hidden like all but the ABI (the
// pragma hides the declarations too, which -fvisibility=hidden leaves
// default). The thread_locals with a constant initialiser are declared so
// (RNN_CONSTANT_INIT): the other files then reach them directly, as the file
// that defines them does, not through a wrapper that first checks whether
// they need initialising (and imports a weak symbol per variable into the
// library's dynamic symbol table).
#if __has_cpp_attribute(clang::require_constant_initialization)
#define RNN_CONSTANT_INIT [[clang::require_constant_initialization]]
#else
#define RNN_CONSTANT_INIT
#endif
#pragma GCC visibility push(hidden)

namespace rnn::cuda {

/// The stream of the calling thread's model call (rnn_cuda_set_stream).
RNN_CONSTANT_INIT extern thread_local CUstream currentStream;
/// The first error recorded on this thread and not yet taken (CudaErrors.h).
extern thread_local std::string threadError;
extern std::mutex loadMutex;
extern std::string loadError; // Errors while loading kernels (any thread).

/// Makes the primary context of the device current on this thread.
bool ensureContext();

/// Whether the on/off setting `variable` is on (anything but "0"; unset is
/// on). The per-call settings below are read at every model call (not
/// cached for the process), so that a benchmark can compare both values in
/// one process; graphs captured under each are kept apart.
bool settingOn(const char *variable);

/// The calling thread's settings for its current model call:
/// RNN_CUDA_OVERLAP_LAUNCHES=0 launches every kernel in stream order;
/// RNN_CUDA_PACKED_GEMM=0 keeps the GEMMs on weights too large for L2 off
/// the packed kernel (PackedGemm.h); RNN_CUDA_GEMV=0 runs GEMMs of few rows
/// on cuBLAS too (SmallBatchGemv.h); RNN_CUDA_PRELOADED_GEMM=0 runs the
/// K-split partials on cuBLAS too (PreloadedPartialsGemm.h);
/// RNN_CUDA_PERSISTENT=0 refuses every persistent kernel, so that the
/// recurrences run step by step (rnn_cuda_require_resident_next_launch);
/// RNN_CUDA_GRAPHS=0 runs every call directly, kernel by kernel;
/// RNN_CUDA_LANES=0 issues a layer wavefront's lanes on the call's stream,
/// in order (StreamLanes.h); RNN_CUDA_BATCH_TILES=N (a positive number)
/// runs a grid-wide persistent kernel's batch in at most N tiles
/// (rnn_cuda_persistent_batch_tiles; unset, as many as the SMs hold);
/// RNN_CUDA_LOW_LATENCY=0 exchanges every grid-wide kernel's staged vector
/// by the step counter and bulk copies (rnn_cuda_persistent_low_latency).
RNN_CONSTANT_INIT extern thread_local bool graphsThisCall;
RNN_CONSTANT_INIT extern thread_local bool overlapThisCall;
RNN_CONSTANT_INIT extern thread_local bool packedThisCall;
RNN_CONSTANT_INIT extern thread_local bool gemvThisCall;
RNN_CONSTANT_INIT extern thread_local bool preloadedThisCall;
RNN_CONSTANT_INIT extern thread_local bool persistentThisCall;
RNN_CONSTANT_INIT extern thread_local bool lanesThisCall;
RNN_CONSTANT_INIT extern thread_local bool lowLatencyThisCall;
/// RNN_CUDA_BATCH_TILES for this call, 0 where unset (no limit).
RNN_CONSTANT_INIT extern thread_local int batchTilesThisCall;
/// RNN_CUDA_BATCH_TILES as the environment has it: a whole number from 1 to
/// 1024; 0 where unset or empty (no limit); -1 for anything else, which
/// rnn_cuda_set_stream records as the call's error.
int batchTilesSetting();

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
long long pinnedCublasWorkspaceBytes();
RNN_CONSTANT_INIT extern thread_local long long pinnedWorkspaceThisCall;

/// The algorithm of a captured call's per-step GEMMs (RNN_GEMM_PER_STEP and
/// the K-split partials): cuBLAS's own pick, or one of the first
/// kLtCandidates of cuBLASLt's heuristic (LtCandidates.h), tuned per graph
/// after the workspace. RNN_CUDA_GEMM_CANDIDATE=K pins candidate K, -1
/// cuBLAS's pick. Returns the pinned value, or kTunedCandidate when unset
/// (or not a number from -1 to kLtCandidates - 1).
constexpr int kTunedCandidate = -2;
int pinnedGemmCandidate();
RNN_CONSTANT_INIT extern thread_local int pinnedCandidateThisCall;
/// The candidate of the current call's (or capture's) per-step GEMMs; -1:
/// cuBLAS's own pick. Direct calls keep cuBLAS's pick unless pinned.
RNN_CONSTANT_INIT extern thread_local int gemmCandidateThisCall;
/// GEMMs issued on a cuBLASLt candidate since the counter was last reset:
/// a capture that issued none is the same as with cuBLAS's own pick.
RNN_CONSTANT_INIT extern thread_local int ltGemmsIssued;
RNN_CONSTANT_INIT extern thread_local size_t workspaceBytesThisCall;
/// The current call's workspace (0 outside a model call).
RNN_CONSTANT_INIT extern thread_local CUdeviceptr callWorkspace;

/// Whether the last work issued on this thread in this model call is a GEMM
/// that cuBLAS ran with bf16 or f16 data (rnn_cuda_overlap_next_launch);
/// every launch, copy, fill and GEMM updates it.
RNN_CONSTANT_INIT extern thread_local bool afterReducedPrecisionCublas;

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
RNN_CONSTANT_INIT extern thread_local bool orderedSinceFence;

/// Whether this thread is capturing a call.
RNN_CONSTANT_INIT extern thread_local bool capturingThisThread;
/// Whether cuBLAS has run a GEMM on this thread outside a capture: its
/// handle exists and has done its one-time set-up, so that a call can be
/// captured the first time it is made.
RNN_CONSTANT_INIT extern thread_local bool cublasWarmThisThread;

} // namespace rnn::cuda

#pragma GCC visibility pop

#endif // RNN_LIB_RUNTIME_CUDA_CALLSTATE_H
