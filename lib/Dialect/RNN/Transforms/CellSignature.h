//===- CellSignature.h - Editing a cell and its applications ----*- C++ -*-===//
//
// The passes that move work out of a cell (weight packing, input projection)
// change the cell's signature; every rnn.scan and rnn.step that applies the
// cell must change with it. CellSignatureEditor does both at once.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_DIALECT_RNN_TRANSFORMS_CELLSIGNATURE_H
#define RNN_LIB_DIALECT_RNN_TRANSFORMS_CELLSIGNATURE_H

#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SetVector.h"

namespace rnn {

/// Builds, before `application` (an rnn.scan or rnn.step), the operand that a
/// new cell argument receives from it.
using OperandBuilder =
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Operation *)>;

class CellSignatureEditor {
public:
  /// Fails when the cell's symbol has a user other than rnn.scan / rnn.step
  /// (its signature then cannot change).
  static mlir::FailureOr<CellSignatureEditor> create(CellOp cell);

  CellOp getCell() { return cell; }
  llvm::ArrayRef<mlir::Operation *> getApplications() { return applications; }

  /// Appends a per-step input of `rowType` ([B, N]).
  mlir::BlockArgument appendInput(mlir::Type rowType, OperandBuilder build);
  /// Appends a parameter of `type`.
  mlir::BlockArgument appendParam(mlir::Type type, OperandBuilder build);
  /// Appends a state of `type` after the others (the caller adds its new
  /// value to the yield); applications get an extra final-state result,
  /// after the existing ones, that nothing reads.
  mlir::BlockArgument appendState(mlir::Type type, OperandBuilder build);
  /// Gives the cell's output `index` the element type `element` (the caller
  /// changes what the yield emits). Every user of that output of every
  /// application must be an rnn.cast to the new type: commit replaces those
  /// casts with the new output.
  void narrowOutput(unsigned index, mlir::Type element);
  /// Drops the inputs (keeping at least one) and parameters that the body no
  /// longer reads.
  void dropUnusedArguments();
  /// Rewrites the cell's type and rebuilds every application.
  void commit();

  /// The operand that `application` passes for the cell's block argument
  /// `arg` (an input, state or parameter).
  mlir::Value getOperandFor(mlir::Operation *application,
                            mlir::BlockArgument arg);

private:
  struct Application {
    mlir::Operation *op;
    llvm::SmallVector<mlir::Value> inputs, states, params;
  };

  CellSignatureEditor(CellOp cell) : cell(cell) {}

  /// Appends to `group` of every application the operand `build` makes.
  void buildOperands(llvm::SmallVector<mlir::Value> Application::*group,
                     OperandBuilder build);

  CellOp cell;
  llvm::SmallVector<mlir::Operation *> applications;
  /// Per narrowed output, its new element type.
  llvm::SmallDenseMap<unsigned, mlir::Type> narrowed;
  llvm::SmallVector<Application> operands;
};

/// Moves every computation in `cell` that depends on parameters (and
/// constants) alone out of the cell: it is cloned before each application and
/// its result enters the cell as a new parameter. Returns the number of ops
/// moved out. This is how weights are packed once, never per step.
unsigned hoistParameterOnlyOps(CellSignatureEditor &editor);

/// For every cell of `module` whose signature can change (see
/// CellSignatureEditor::create): moves its parameter-only computations out,
/// so that every weight the rewrite meets is a parameter, calls `edit`, and
/// commits the editor. Returns how many ops were moved out before `edit`.
unsigned
editCells(mlir::ModuleOp module,
          llvm::function_ref<void(CellOp, CellSignatureEditor &)> edit);

/// Whether `value`, inside a cell, depends on the cell's parameters and on
/// constants alone.
bool isParameterOnly(CellOp cell, mlir::Value value);

/// Adds to `slice`, in program order, the ops inside the cell that compute
/// `value` (its backward slice down to block arguments).
void collectSlice(mlir::Value value, llvm::SetVector<mlir::Operation *> &slice);

/// Erases, users first, the ops of `block` that have no uses left and that
/// `mayErase` accepts. Returns how many were erased.
unsigned eraseDeadOps(mlir::Block &block,
                      llvm::function_ref<bool(mlir::Operation *)> mayErase);

} // namespace rnn

#endif // RNN_LIB_DIALECT_RNN_TRANSFORMS_CELLSIGNATURE_H
