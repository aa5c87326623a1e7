//===- ScalarSemantics.h - Elementwise rnn ops as scalar code ---*- C++ -*-===//
//
// What each elementwise rnn op computes on one element, as arith and math
// ops. The fusion pass builds rnn.pointwise bodies with it and the lowerings
// build loop bodies with it, so there is one definition of, say, sigmoid.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_DIALECT_RNN_IR_SCALARSEMANTICS_H
#define RNN_DIALECT_RNN_IR_SCALARSEMANTICS_H

#include "mlir/IR/Builders.h"

namespace rnn {

/// Whether `op` is an elementwise rnn op (binary or unary pointwise math, or
/// a cast) with a scalar form.
bool isElementwise(mlir::Operation *op);

/// Builds the scalar form of the elementwise `op` on `operands` (one scalar
/// per operand); `resultElement` is the element type of op's result.
mlir::Value buildScalarElementwise(mlir::OpBuilder &builder, mlir::Location loc,
                                   mlir::Operation *op,
                                   mlir::ValueRange operands,
                                   mlir::Type resultElement);

} // namespace rnn

#endif // RNN_DIALECT_RNN_IR_SCALARSEMANTICS_H
