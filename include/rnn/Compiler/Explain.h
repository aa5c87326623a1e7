//===- Explain.h - What a model launches, and why ---------------*- C++ -*-===//
//
// `rnn-compile --explain` and `model.explain()` print, for every public
// function of an optimised module, the GEMMs and kernels it launches before,
// in and after each step loop, and which rewrite put each one there, so that
// a researcher can see why a cell runs more kernels per step than an LSTM.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_COMPILER_EXPLAIN_H
#define RNN_COMPILER_EXPLAIN_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace rnn {

/// The report for `module` (after rnn-optimize, or not: it describes what
/// the module launches as it stands).
std::string explainModule(mlir::ModuleOp module);

/// For --target=cuda: which time loops of `module` (optimised, not yet
/// lowered) run as one kernel on `chip` and which step by step, and why
/// (a copy of the module is bufferized to find out). `persistentKernels`:
/// whether they are built at all (rnn-compile --persistent-kernels), and
/// `deviceLibrary` whether the device library's grid-wide kernels are.
std::string explainPersistentKernels(mlir::ModuleOp module,
                                     llvm::StringRef chip,
                                     bool persistentKernels,
                                     bool deviceLibrary);

} // namespace rnn

#endif // RNN_COMPILER_EXPLAIN_H
