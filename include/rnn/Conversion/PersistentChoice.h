//===- PersistentChoice.h - Which time loops run as one kernel --*- C++ -*-===//
//
// What the CUDA lowering makes of each time loop of a bufferized module: a
// block kernel (convert-step-loops-to-block-kernels), the grid-wide
// persistent kernel (convert-step-loops-to-persistent-kernels), or the step
// loop, and why. `rnn-compile --target=cuda --explain` prints it.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_CONVERSION_PERSISTENTCHOICE_H
#define RNN_CONVERSION_PERSISTENTCHOICE_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace rnn {

/// One line per time loop of each public function of `module` (bufferized,
/// before the GEMMs are mapped), in order: what it runs as, with
/// `maxSharedBytes` of shared memory a block, clusters of up to
/// `maxClusterSize` blocks and, with `deviceLibrary`, the
/// grid-wide kernels of the device library (sm_90).
std::string describePersistentChoices(mlir::ModuleOp module,
                                      int64_t maxSharedBytes,
                                      int64_t maxClusterSize,
                                      bool deviceLibrary);

} // namespace rnn

#endif // RNN_CONVERSION_PERSISTENTCHOICE_H
