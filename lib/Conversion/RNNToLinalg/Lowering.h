//===- Lowering.h - Pieces of the rnn-to-linalg lowering --------*- C++ -*-===//

#ifndef RNN_LIB_CONVERSION_RNNTOLINALG_LOWERING_H
#define RNN_LIB_CONVERSION_RNNTOLINALG_LOWERING_H

#include "rnn/Conversion/Passes.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"

namespace rnn {
namespace lowering {

/// The dynamic sizes of `type`, read with tensor.dim from the first of
/// `sources` whose trailing-aligned dimension is dynamic too (a source whose
/// aligned size is 1 broadcasts and says nothing).
mlir::SmallVector<mlir::Value> dynamicSizes(mlir::OpBuilder &b,
                                            mlir::Location loc,
                                            mlir::RankedTensorType type,
                                            mlir::ValueRange sources);

/// The sizes of `type` for slicing: static sizes as attributes, dynamic
/// ones read with tensor.dim from dimension `d + sourceOffset` of `source`.
mlir::SmallVector<mlir::OpFoldResult>
mixedSizes(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
           mlir::Value source, int64_t sourceOffset = 0);

/// An empty tensor of `type` whose dynamic sizes come from `sources`.
mlir::Value emptyLike(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::RankedTensorType type, mlir::ValueRange sources);

/// The indexing map that reads an operand of `operandType` broadcast to
/// `resultType` under the dialect's rule (trailing alignment, size-1 axes
/// read at index 0).
mlir::AffineMap broadcastMap(mlir::MLIRContext *context,
                             mlir::RankedTensorType operandType,
                             mlir::RankedTensorType resultType);

/// A parallel linalg.generic computing `resultType` elementwise from
/// `inputs` (broadcast), whose scalar body `body` builds.
using ScalarBody = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;
mlir::Value elementwise(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType resultType,
                        mlir::ValueRange inputs, ScalarBody body);

/// Reduces the last axis of `input` into a [..., 1] tensor: a sum, or a
/// maximum when `isMax`.
mlir::Value reduceRows(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value input, bool isMax);

/// Lowers one op of the dialect (not a cell, scan or step) to tensor-level
/// code; returns its replacement values.
mlir::FailureOr<mlir::SmallVector<mlir::Value>> lowerOp(mlir::OpBuilder &b,
                                                        mlir::Operation *op);

/// Lowers an rnn.pointwise group: one linalg.generic per phase between its
/// row reductions.
mlir::SmallVector<mlir::Value> lowerPointwiseGroup(mlir::OpBuilder &b,
                                                   PointwiseOp group);

/// The body of a contraction's linalg.generic: yields args[2] + x * w of
/// its operands args[0] and args[1], extended to `element` where narrower.
void buildMultiplyAccumulate(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::ValueRange args, mlir::Type element);
/// A contraction of rows `lhs` [..., K] with a weight ([N, K], or [K, N]
/// with `weightInOut`) onto `acc` (or zeros), marked for the library GEMM
/// lowering.
mlir::Value buildContraction(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value lhs, mlir::Value rhs, mlir::Value acc,
                             bool weightInOut, bool allowTf32,
                             mlir::RankedTensorType resultType);
/// `lhsᵀ · rhs` over all rows of `lhs` [..., N] and `rhs` [..., K], as one
/// marked contraction: buildHeadwiseOuterSum's with one head and one gate.
mlir::Value buildOuterSum(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value lhs, mlir::Value rhs, bool allowTf32,
                          mlir::RankedTensorType resultType);
/// Per head h and gate g, the sum over all rows of `lhs` [..., G·NH·N] (gate,
/// head, unit) and `rhs` [..., NH·K] of lhs[r, g, h]ᵀ · rhs[r, h]: a
/// [NH, G, N, K] tensor of `element`s from one linalg.generic marked
/// kHeadwiseOuterSum, which convert-matmul-to-library-gemm makes one
/// strided-batched GEMM per gate reading lhs transposed in place.
mlir::Value buildHeadwiseOuterSum(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Value lhs, mlir::Value rhs,
                                  int64_t heads, int64_t gates,
                                  mlir::Type element, bool allowTf32);

/// Lowers the head-wise products: one linalg.generic contraction each,
/// marked with its form (kHeadwiseGemmAttr).
mlir::Value lowerHeadwiseMatmul(mlir::OpBuilder &b, HeadwiseMatmulOp op);
mlir::Value lowerHeadwiseOuterSum(mlir::OpBuilder &b, HeadwiseOuterSumOp op);

/// Replaces an rnn.scan by a loop over time around the inlined cell.
mlir::LogicalResult lowerScan(ScanOp scan, CellOp cell);

/// Replaces an rnn.step by the inlined cell.
mlir::LogicalResult lowerStep(StepOp step, CellOp cell);

/// Makes every linalg op that computes a loop-carried tensor from an unread
/// tensor.empty write into the carried tensor instead, so bufferization can
/// update loop state in place.
void reuseLoopCarriedDestinations(mlir::Operation *root);

/// Where a loop writes the result of a linalg.generic into a row of a
/// loop-carried sequence and also uses it otherwise (a state that is also
/// an output: the LSTM's and the GRU's h), the generic gets a second output
/// that is that row: the kernel stores the value twice, into the state and
/// into the sequence, and bufferization needs no copy per step.
void writeSequenceRowsInPlace(mlir::Operation *root);

/// Marks the tensor arguments of every function with a body
/// `bufferization.writable = false`: bufferization copies before writing
/// into them.
void markArgumentsReadOnly(mlir::Operation *root);

} // namespace lowering
} // namespace rnn

#endif // RNN_LIB_CONVERSION_RNNTOLINALG_LOWERING_H
