//===- ProductTypes.h - Element types of the dialect's products -*- C++ -*-===//
//
// rnn.matmul and rnn.outer_sum follow one precision rule: equal operand
// element types; a result of that type, or f32 for f16/bf16 operands
// (half-precision storage, single-precision accumulation); allow_tf32 only
// for f32 operands. The outer sums also share their rule for the rows.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_DIALECT_RNN_IR_PRODUCTTYPES_H
#define RNN_LIB_DIALECT_RNN_IR_PRODUCTTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace rnn {

/// Checks the rule above for `op`, with diagnostics that name the types.
mlir::LogicalResult verifyProductTypes(mlir::Operation *op,
                                       mlir::RankedTensorType lhs,
                                       mlir::RankedTensorType rhs,
                                       mlir::Type resultElement,
                                       bool allowTf32);

/// Checks that the operands of an outer sum over rows (rnn.outer_sum,
/// rnn.headwise_outer_sum) have the same rows: equal ranks, and equal
/// leading sizes where both are static.
mlir::LogicalResult verifySameRows(mlir::Operation *op,
                                   mlir::RankedTensorType lhs,
                                   mlir::RankedTensorType rhs);

} // namespace rnn

#endif // RNN_LIB_DIALECT_RNN_IR_PRODUCTTYPES_H
