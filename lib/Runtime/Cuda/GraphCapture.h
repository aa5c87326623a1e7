//===- GraphCapture.h - Whole calls as CUDA graphs --------------*- C++ -*-===//
//
// rnn_cuda_call (GraphCapture.cpp) captures a model call into a CUDA graph
// and replays it; GraphTuning.cpp tunes a graph while it is captured. This
// is what each of the two uses of the other.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CUDA_GRAPHCAPTURE_H
#define RNN_LIB_RUNTIME_CUDA_GRAPHCAPTURE_H

#include <cuda.h>

#include <cstddef>
#include <string>

namespace rnn::cuda {

/// RNN_CUDA_GRAPH_DOT=DIR writes every captured graph to DIR/graph-N.dot
/// (cuGraphDebugDotPrint, verbose) and a line "DIR/graph-N.dot KEY" to
/// DIR/graphs.txt, with a line per tuning's timings: the nodes a call really
/// consists of, for finding where the time between kernels goes. The
/// directory, or null when the setting is off.
const char *graphDumpDir();

/// Appends `line` to DIR/graphs.txt.
void appendGraphLog(const char *dir, const std::string &line);

/// One call captured on `stream` with a cuBLAS workspace of
/// `workspaceBytes`, instantiated; null on failure (recorded). `label` names
/// it in RNN_CUDA_GRAPH_DOT's log.
CUgraphExec captureCall(CUstream stream, void (*call)(void **),
                        void **descriptors, size_t workspaceBytes,
                        const std::string &label);

/// The call captured once per workspace size of kTunedWorkspacesMiB, with
/// kernels launched early (unless RNN_CUDA_OVERLAP_LAUNCHES=0) and in plain
/// stream order, each replayed in alternation; then, unless the candidate is
/// pinned, the best of these captured again with the per-step GEMMs on each
/// of cuBLASLt's first kLtCandidates candidates and replayed in alternation
/// with it. The one kept is replayed last by the caller (so the outputs are
/// its own). A call is a function of its arguments, so replays only repeat
/// its work. Null on failure (recorded).
CUgraphExec tunedCall(CUstream stream, void (*call)(void **),
                      void **descriptors, const std::string &label);

} // namespace rnn::cuda

#endif // RNN_LIB_RUNTIME_CUDA_GRAPHCAPTURE_H
