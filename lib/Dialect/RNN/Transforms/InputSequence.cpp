//===- InputSequence.cpp - A cell's input-only values over a sequence -----===//

#include "InputSequence.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace rnn {

bool isRankPolymorphic(Operation *op) {
  if (auto split = dyn_cast<SplitOp>(op))
    return !split.getAxis() || *split.getAxis() < 0;
  if (auto concat = dyn_cast<ConcatOp>(op))
    return !concat.getAxis() || *concat.getAxis() < 0;
  return isa<MatmulOp, HeadwiseMatmulOp, AddOp, SubOp, MulOp, DivOp, MaxOp,
             MinOp, NegOp, SigmoidOp, TanhOp, ReluOp, ExpOp, LogOp, SqrtOp,
             RsqrtOp, ConstantOp, CastOp, HeavisideOp, ZerosLikeOp, SelectOp,
             ReduceSumOp, ReduceMeanOp, ReduceMaxOp, LayerNormOp>(op);
}

bool isInputOnly(CellOp cell, Value value, bool &readsInput) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (cell.isInputIndex(arg.getArgNumber())) {
      readsInput = true;
      return true;
    }
    return cell.isParamIndex(arg.getArgNumber());
  }
  Operation *def = value.getDefiningOp();
  if (!def || !isPure(def) || !isRankPolymorphic(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return isInputOnly(cell, operand, readsInput);
  });
}

/// The type a cell's `rowType` ([B, N]) takes at an application whose input
/// operand has type `operandType`: the application's batch, and over a
/// sequence ([T, B, I]) the time axis in front.
static RankedTensorType atApplication(Type rowType, Type operandType,
                                      bool overSequence) {
  auto row = cast<RankedTensorType>(rowType);
  auto operand = cast<RankedTensorType>(operandType);
  SmallVector<int64_t> shape(row.getShape());
  if (!shape.empty())
    shape.front() = operand.getDimSize(overSequence ? 1 : 0);
  if (overSequence)
    shape.insert(shape.begin(), operand.getDimSize(0));
  return RankedTensorType::get(shape, row.getElementType());
}

Value cloneOverApplication(CellSignatureEditor &editor, OpBuilder &builder,
                           Operation *application, Value value) {
  CellOp cell = editor.getCell();
  llvm::SetVector<Operation *> slice;
  collectSlice(value, slice);

  IRMapping mapping;
  llvm::DenseSet<Value> sequenceValues;
  Type inputType;
  for (BlockArgument arg : cell.getBodyBlock().getArguments()) {
    Value operand = editor.getOperandFor(application, arg);
    if (!operand)
      continue;
    mapping.map(arg, operand);
    if (cell.isInputIndex(arg.getArgNumber())) {
      sequenceValues.insert(arg);
      inputType = operand.getType();
    }
  }
  bool overSequenceAxis = isa<ScanOp>(application);
  for (Operation *op : slice) {
    Operation *clone = builder.clone(*op, mapping);
    bool dependsOnInput = llvm::any_of(
        op->getOperands(), [&](Value v) { return sequenceValues.contains(v); });
    if (!dependsOnInput)
      continue;
    for (auto [result, cloned] :
         llvm::zip(op->getResults(), clone->getResults())) {
      sequenceValues.insert(result);
      cloned.setType(
          atApplication(result.getType(), inputType, overSequenceAxis));
    }
  }
  return mapping.lookup(value);
}

} // namespace rnn
