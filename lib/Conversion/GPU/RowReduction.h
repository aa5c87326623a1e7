//===- RowReduction.h - Recognising row reductions on buffers ---*- C++ -*-===//

#ifndef RNN_LIB_CONVERSION_GPU_ROWREDUCTION_H
#define RNN_LIB_CONVERSION_GPU_ROWREDUCTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace rnn {

constexpr int64_t kWarpSize = 32;

/// The value that leaves `combiner`'s other operand unchanged, or null when
/// `combiner` is not an associative, commutative float reduction.
mlir::TypedAttr neutralElement(mlir::Operation *combiner, mlir::FloatType type);

/// The single combining op of a row reduction `out[r..., 0] = op(in[r...,
/// k], out[r..., 0])` over the last axis of a memref, or null.
mlir::Operation *matchRowReduction(mlir::linalg::GenericOp op);

/// combiner(lhs, rhs), cloned from the reduction's body.
mlir::Value combine(mlir::OpBuilder &b, mlir::Operation *combiner,
                    mlir::Value lhs, mlir::Value rhs);

/// `partial` combined across the 32 lanes of a warp by butterfly shuffles:
/// every lane ends with the warp's result.
mlir::Value combineAcrossWarp(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Operation *combiner, mlir::Value partial);

} // namespace rnn

#endif // RNN_LIB_CONVERSION_GPU_ROWREDUCTION_H
