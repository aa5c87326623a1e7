//===- Broadcast.h - The dialect's one broadcasting rule --------*- C++ -*-===//
//
// Every binary pointwise op, and every fused pointwise region, broadcasts its
// operands the same way. The rule lives here so that the verifier, the
// fusion pass and the lowerings agree on it.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_DIALECT_RNN_IR_BROADCAST_H
#define RNN_DIALECT_RNN_IR_BROADCAST_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace rnn {

/// The shape that `lhs` and `rhs` broadcast to: operands are aligned at their
/// trailing dimensions; each aligned pair must be equal or one must be 1; a
/// missing leading dimension counts as 1. A dynamic dimension only matches a
/// dynamic one or 1. Returns std::nullopt when the shapes do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// Whether a value of shape `operand` may take part in a pointwise op whose
/// result has shape `result` (the operand broadcasts to exactly `result`).
bool broadcastsTo(llvm::ArrayRef<int64_t> operand,
                  llvm::ArrayRef<int64_t> result);

} // namespace rnn

#endif // RNN_DIALECT_RNN_IR_BROADCAST_H
