//===- ModelManifest.h - A model's signatures, from its manifest -*- C++
//-*-===//
//
// What the loader reads from a model library's `rnn_manifest` text
// (docs/runtime.md): per function, its arguments' and results' dtypes and
// shapes (static sizes, or symbols that every call binds), its entry point,
// and for a function compiled with --training its training forward and
// backward. rnn_model_run checks every call against these before the model's
// code sees a tensor.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_MODELMANIFEST_H
#define RNN_LIB_RUNTIME_MODELMANIFEST_H

#include "rnn/Runtime/rnn_runtime.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rnn::runtime {

/// One size of a signature: static, or a symbol that every call binds.
struct Dim {
  /// The size when static, -1 when dynamic.
  int64_t size = 0;
  /// For a dynamic size, the symbol's dense index in its function (see
  /// Function::symbolNames); -1 when static.
  int32_t symbol = -1;
};

struct TensorSpec {
  rnn_dtype dtype = RNN_F32;
  int32_t rank = 0;
  Dim dims[RNN_MAX_RANK];
};

/// Where a symbol first appears among a function's arguments: each call binds
/// the symbol to the size it finds there, and every other use must agree.
struct Binder {
  int32_t arg = -1;
  int32_t dim = -1;
};

struct Function {
  std::string name;
  std::vector<TensorSpec> args;
  std::vector<TensorSpec> results;
  /// The manifest's number k of each symbol `s<k>`, by dense index. Symbols
  /// are renumbered densely so that a call can keep its bindings in an array
  /// however large the manifest's numbers are.
  std::vector<int64_t> symbolNames;
  std::vector<Binder> binders;
  void (*call)(void **descriptors) = nullptr;
  /// For a function compiled with --training: its training forward and
  /// backward, how many saved tensors the forward adds to this function's
  /// results, and the arguments whose gradients the backward returns.
  std::string trainName, backwardName;
  int32_t numSaved = 0;
  std::vector<int32_t> gradientArgs;
};

/// Parses a manifest into `functions`. On failure returns false and leaves
/// the reason, with the line it was found on, in `error`.
bool parseManifest(std::string_view text, std::vector<Function> &functions,
                   std::string &error);

} // namespace rnn::runtime

#endif // RNN_LIB_RUNTIME_MODELMANIFEST_H
