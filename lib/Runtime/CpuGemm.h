//===- CpuGemm.h - How rnn_cpu_gemm reports a call it cannot do -*- C++ -*-===//
//
// rnn_cpu_gemm has no status (compiled code calls it and carries on), so a
// call it cannot perform records the reason on the calling thread instead.
// rnn_model_run clears the record before it calls into a model and turns what
// is there afterwards into its own status, so that such a failure reaches the
// user rather than leaving them with silently wrong results.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_CPUGEMM_H
#define RNN_LIB_RUNTIME_CPUGEMM_H

#include "rnn/Runtime/rnn_runtime.h"

namespace rnn::runtime {

struct GemmFailure {
  rnn_status status = RNN_OK;
  // A fixed buffer: recording a failure must work when memory has run out.
  char message[256] = {};
};

/// Forgets the failure recorded on this thread, if any.
void clearGemmFailure();

/// The first failure recorded on this thread since the last
/// clearGemmFailure() (later ones are usually its consequences), or null.
const GemmFailure *getGemmFailure();

} // namespace rnn::runtime

#endif // RNN_LIB_RUNTIME_CPUGEMM_H
