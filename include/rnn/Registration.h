//===- Registration.h - Registering rnn in another MLIR tool ----*- C++ -*-===//
//
// What a compiler that embeds the rnn dialect calls, as MLIR's own
// registerAllDialects / registerAllPasses: the dialect, its passes and its
// pipelines. docs/embedding.md shows a tool built on them.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_REGISTRATION_H
#define RNN_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace rnn {

/// Registers the rnn dialect and the upstream dialects its ops and passes
/// create (arith, math, func, tensor, linalg, scf, memref, bufferization:
/// what rnn-optimize and the lowerings out of rnn build) into `registry`.
void registerDialects(mlir::DialectRegistry &registry);

/// Registers rnn's passes (rnn-concat-gate-matmuls, rnn-differentiate, ...),
/// its lowerings (convert-rnn-to-linalg, ...) and its pipelines
/// (rnn-optimize) in the global pass registry, so that they can be named in
/// a pass pipeline string or on an *-opt tool's command line.
void registerPasses();

} // namespace rnn

#endif // RNN_REGISTRATION_H
