//===- AdjointRules.h - Reverse-mode rules for the dialect's ops -*- C++
//-*-===//
//
// One adjoint rule per op: given the gradient of an op's results, the
// gradients of its operands, built as rnn ops. The same rules serve a cell's
// step and a function's body; what differs is where a gradient that sums
// over time goes (a `Sink`), so that weight and input gradients leave the
// time loop.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_DIALECT_RNN_TRANSFORMS_ADJOINTRULES_H
#define RNN_LIB_DIALECT_RNN_TRANSFORMS_ADJOINTRULES_H

#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"

namespace rnn {

/// Decides, for a gradient contribution, whether it is built where it
/// arises or handed elsewhere. The default builds everything in place.
class AdjointSink {
public:
  virtual ~AdjointSink() = default;
  /// A contribution `full` (of the broadcast shape) to `operand`; returns
  /// true when taken (the caller then builds nothing).
  virtual mlir::FailureOr<bool>
  takeBroadcast(mlir::Value operand, mlir::Value full, mlir::Operation *op) {
    return false;
  }
  /// The gradient of `matmul`'s weight, `outer_sum(a, b)` (both in the
  /// operands' element type); returns true when taken.
  virtual mlir::FailureOr<bool>
  takeWeightGradient(MatmulOp matmul, mlir::Value a, mlir::Value b) {
    return false;
  }
  /// The gradient of `matmul`'s lhs, `matmul(g, weight)` with the layout
  /// flipped (`g` in the weight's element type); returns true when taken.
  virtual bool takeLhsGradient(MatmulOp matmul, mlir::Value g) { return false; }
  /// The gradient of a head-wise product's weight,
  /// `headwise_outer_sum(gateMajor, headMajor)`; returns true when taken.
  virtual mlir::FailureOr<bool>
  takeHeadwiseWeightGradient(HeadwiseMatmulOp product, mlir::Value gateMajor,
                             mlir::Value headMajor) {
    return false;
  }
};

/// Accumulates gradients of primal values and applies the adjoint rules.
/// Primal values are the original ones; `primal` maps them to the values the
/// rules may read (the forward recomputed, or saved).
class AdjointBuilder {
public:
  AdjointBuilder(mlir::OpBuilder &builder, mlir::IRMapping &primal,
                 AdjointSink &sink)
      : loc(builder.getUnknownLoc()), b(builder), primal(primal), sink(sink) {}

  /// Adds `grad` (of the type of `value`) to the gradient of `value`.
  void accumulate(mlir::Value value, mlir::Value grad);
  /// The gradient of `value` so far, or null.
  mlir::Value gradient(mlir::Value value) const { return grads.lookup(value); }
  /// Applies the adjoint rule of `op` (scans and steps excepted) if any of
  /// its results has a gradient. Fails, with a diagnostic naming the op,
  /// where no rule exists.
  mlir::LogicalResult apply(mlir::Operation *op);

  /// Helpers that build rnn ops at the builder's insertion point.
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value div(mlir::Value x, mlir::Value y);
  mlir::Value neg(mlir::Value x);
  mlir::Value scalar(double value, mlir::Type element);
  mlir::Value zerosLike(mlir::Value x);
  mlir::Value castTo(mlir::Value x, mlir::Type element);
  mlir::Value sumTo(mlir::Value full, mlir::Type type);
  /// `lhsᵀ · rhs` over all rows, in `element` (casting the f32 product of
  /// f16/bf16 operands).
  mlir::Value outerSum(mlir::Value lhs, mlir::Value rhs, bool allowTf32,
                       mlir::Type element);
  /// `headwise_outer_sum(gateMajor, headMajor)` with `gates` gates, of the
  /// type of the weight it is the gradient of (cast from the f32 product of
  /// f16/bf16 operands).
  mlir::Value headwiseOuterSum(mlir::Value gateMajor, mlir::Value headMajor,
                               int64_t gates, bool allowTf32,
                               mlir::RankedTensorType weightType);
  /// `g · W` or `g · Wᵀ` (the flipped layout of a matmul whose weight is
  /// `weight`), cast to `element`.
  mlir::Value matmulFlipped(mlir::Value g, mlir::Value weight, bool weightInOut,
                            bool allowTf32, mlir::Type element);

  /// Where the ops built next are said to come from.
  mlir::Location loc;

private:
  mlir::Value p(mlir::Value v) const { return primal.lookupOrDefault(v); }
  mlir::LogicalResult broadcast(mlir::Value operand, mlir::Value full,
                                mlir::Operation *op);
  mlir::LogicalResult applyMatmul(MatmulOp matmul, mlir::Value g);
  mlir::LogicalResult applyHeadwise(HeadwiseMatmulOp product, mlir::Value g);

  mlir::OpBuilder &b;
  mlir::IRMapping &primal;
  AdjointSink &sink;
  llvm::DenseMap<mlir::Value, mlir::Value> grads;
  llvm::DenseMap<std::pair<mlir::Value, mlir::Type>, mlir::Value> casts;
};

} // namespace rnn

#endif // RNN_LIB_DIALECT_RNN_TRANSFORMS_ADJOINTRULES_H
