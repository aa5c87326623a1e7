//===- InputSequence.h - Input-only values over a sequence ----*- C++ -*-===//
//
// What depends on a cell's per-step inputs alone (and on parameters and
// constants), never on a state, computes the same rows whether it runs step
// by step or once over the whole input sequence before the loop.
// rnn-hoist-input-projection moves the products of such values out of the
// loop with this test and this cloning.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_DIALECT_RNN_TRANSFORMS_INPUTSEQUENCE_H
#define RNN_LIB_DIALECT_RNN_TRANSFORMS_INPUTSEQUENCE_H

#include "CellSignature.h"

namespace rnn {

/// Whether `op` computes the same thing on a [T, B, N] sequence as on a
/// [B, N] row when given sequences for its row operands: every op whose
/// axes count from the end.
bool isRankPolymorphic(mlir::Operation *op);

/// Whether `value` depends on the cell's per-step inputs (and parameters and
/// constants) alone, through ops that can run over a whole sequence; sets
/// `readsInput` when an input is among its sources.
bool isInputOnly(CellOp cell, mlir::Value value, bool &readsInput);

/// Clones the computation of `value` (input-only) before `application`,
/// reading the application's operands, and returns the clone of `value`.
/// Before a scan, every value that depends on an input is computed over the
/// whole sequence ([T, B, N]); before a step, on the step's rows.
mlir::Value cloneOverApplication(CellSignatureEditor &editor,
                                 mlir::OpBuilder &builder,
                                 mlir::Operation *application,
                                 mlir::Value value);

} // namespace rnn

#endif // RNN_LIB_DIALECT_RNN_TRANSFORMS_INPUTSEQUENCE_H
