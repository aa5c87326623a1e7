//===- CellDerivative.h - The training twin and adjoint of a cell -*- C++
//-*-===//
//
// rnn-differentiate works in two halves: CellDerivative.cpp derives, for one
// cell, its training twin (the step that also emits what the backward needs)
// and its adjoint cell, and says how a scan must apply them (which sequences
// the adjoint takes, which gradients leave the loop as one GEMM or sum over
// all rows); Differentiate.cpp rewrites the functions that apply cells.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_DIALECT_RNN_TRANSFORMS_CELLDERIVATIVE_H
#define RNN_LIB_DIALECT_RNN_TRANSFORMS_CELLDERIVATIVE_H

#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace rnn::differentiation {

/// What a value of the adjoint step stands for at the application: one of
/// the sequences the application passes the adjoint cell, or one of the
/// adjoint cell's per-step outputs.
struct Source {
  enum Kind { ResultGrad, ForwardInput, PrevState, Saved, Output } kind;
  unsigned index;
  /// When set, the value is the sequence cast to this element type (a cast
  /// runs once over the whole sequence instead of once a step).
  mlir::Type element = {};
  bool operator==(const Source &o) const {
    return kind == o.kind && index == o.index;
  }
};

/// A gradient of a cell parameter, summed over all steps and rows outside
/// the loop: `outer_sum(a, c)` (a weight), `headwise_outer_sum(a, c)` (a
/// head-wise weight) or `sum_to(a)` (anything else).
struct ParamTerm {
  unsigned param;
  bool outer;
  Source a, c;
  bool allowTf32;
  /// For a head-wise weight: its gates, and the term is
  /// `headwise_outer_sum(a, c)`.
  int64_t headwiseGates = 0;
};

/// A gradient of a cell input that is a matmul of a per-step value with a
/// parameter: `matmul(a, W)` with the layout flipped, over the sequence.
struct SunkLhsTerm {
  unsigned input;
  Source a;
  unsigned param;
  bool weightInOut;
  bool allowTf32;
};

/// The training twin and the adjoint of one cell, and how to apply them.
struct CellDerivative {
  CellOp train, adjoint;
  /// The adjoint cell's per-step inputs, in order.
  llvm::SmallVector<Source> adjointInputs;
  /// The forward cell's parameters the adjoint cell takes, in order.
  llvm::SmallVector<unsigned> adjointParams;
  /// The train cell's extra outputs (after the forward's outputs), in order:
  /// PrevState and Saved sources.
  llvm::SmallVector<Source> trainExtras;
  /// States that the step also emits as an output (state k -> output i):
  /// a scan reads the states its steps started from off that output
  /// sequence (rnn.previous_states) instead of saving them.
  llvm::DenseMap<unsigned, unsigned> stateOutputs;
  /// Per forward input: where its in-step gradient is (usually an adjoint
  /// output).
  llvm::SmallVector<std::optional<Source>> inputGradient;
  llvm::SmallVector<SunkLhsTerm> sunkLhs;
  llvm::SmallVector<ParamTerm> paramTerms;
};

/// Derives the training twin and the adjoint of `cell`, inserted after it and
/// named uniquely in `symbols` (the module's table). `saveGates` picks the
/// save policy (gates, or states and recompute). Emits a diagnostic naming
/// the op and the reason when the cell cannot be differentiated.
mlir::FailureOr<CellDerivative>
differentiateCell(CellOp cell, bool saveGates, mlir::OpBuilder &moduleBuilder,
                  mlir::SymbolTable &symbols);

} // namespace rnn::differentiation

#endif // RNN_LIB_DIALECT_RNN_TRANSFORMS_CELLDERIVATIVE_H
