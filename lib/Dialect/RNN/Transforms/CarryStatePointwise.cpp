//===- CarryStatePointwise.cpp - A state's function where it is computed --===//
//
// A cell that multiplies a function of its state, tanh(h)·Uᵀ, starts every
// step with that function: a pointwise kernel of its own (nothing else is
// ready before the matmul), between the previous step's fused kernel and the
// GEMM. The function reads the states alone, so it can run where the states
// are computed, at the end of the previous step, inside the fused kernel
// that computes them: the cell carries f(h) as a state of its own, each
// application passes f(h₀) as its initial value, and the next value is
// f(h'). The values are the same (the same ops on the same operands); a
// masked step passes every state through, the carried f(h) with them. It
// generalises rnn-carry-cast-states from a cast to any pointwise chain.
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "CellSignature.h"
#include "InputSequence.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace rnn {
#define GEN_PASS_DEF_CARRYSTATEPOINTWISE
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// The values of `cell` computed by pointwise ops (those that the fusion
/// puts into a group) from states, parameters and constants alone, mapped to
/// whether a state is among their sources.
llvm::DenseMap<Value, bool> classifyStateOnly(CellOp cell) {
  llvm::DenseMap<Value, bool> readsState;
  for (BlockArgument arg : cell.getStateArgs())
    readsState[arg] = true;
  for (BlockArgument arg : cell.getParamArgs())
    readsState[arg] = false;
  for (Operation &op : cell.getBodyBlock().without_terminator()) {
    if (!isPure(&op) || !isRankPolymorphic(&op) ||
        isa<MatmulOp, HeadwiseMatmulOp>(op))
      continue;
    bool allKnown = true, reads = false;
    for (Value operand : op.getOperands()) {
      auto it = readsState.find(operand);
      if (it == readsState.end()) {
        allKnown = false;
        break;
      }
      reads |= it->second;
    }
    if (!allKnown)
      continue;
    for (Value result : op.getResults())
      readsState[result] = reads;
  }
  return readsState;
}

/// `value`'s row type with the batch of `like` ([B, ...] both).
Type withBatchOf(Type value, Type like) {
  auto row = cast<RankedTensorType>(value);
  SmallVector<int64_t> shape(row.getShape());
  if (!shape.empty())
    shape.front() = cast<RankedTensorType>(like).getDimSize(0);
  return RankedTensorType::get(shape, row.getElementType());
}

/// Clones `slice` (which computes `value`) at `builder`'s insertion point,
/// reading `mapping`'s values for the block arguments; results that depend
/// on a state take the batch of the value that state maps to. Returns the
/// clone of `value`.
Value cloneSlice(OpBuilder &builder, ArrayRef<Operation *> slice,
                 IRMapping &mapping, llvm::DenseSet<Value> stateValues,
                 Value value) {
  for (Operation *op : slice) {
    Operation *clone = builder.clone(*op, mapping);
    Value batchFrom;
    for (Value operand : op->getOperands())
      if (stateValues.contains(operand))
        batchFrom = mapping.lookup(operand);
    if (!batchFrom)
      continue;
    for (auto [result, cloned] :
         llvm::zip(op->getResults(), clone->getResults())) {
      stateValues.insert(result);
      cloned.setType(withBatchOf(result.getType(), batchFrom.getType()));
    }
  }
  return mapping.lookup(value);
}

struct CarryStatePointwisePass
    : public rnn::impl::CarryStatePointwiseBase<CarryStatePointwisePass> {
  void runOnOperation() override {
    SmallVector<CellOp> cells(getOperation().getOps<CellOp>());
    for (CellOp cell : cells)
      carry(cell);
  }

  void carry(CellOp cell) {
    YieldOp yield = cell.getYield();
    llvm::DenseMap<Value, bool> readsState = classifyStateOnly(cell);
    // The next value of every state must come from an op that a fused group
    // can take, so that f(next) joins that group: a state passed through, or
    // computed by a matmul (LSTMP's r), would get a kernel of its own again.
    auto nextValueIsFusible = [&](BlockArgument state) {
      Value next =
          yield.getStates()[state.getArgNumber() - cell.getNumInputs()];
      Operation *def = next.getDefiningOp();
      return def && !isa<MatmulOp, HeadwiseMatmulOp>(def) &&
             isRankPolymorphic(def);
    };
    llvm::SetVector<Value> candidates;
    for (MatmulOp matmul : cell.getBodyBlock().getOps<MatmulOp>()) {
      Value lhs = matmul.getLhs();
      if (!lhs.getDefiningOp() || !readsState.lookup(lhs))
        continue;
      llvm::SetVector<Operation *> slice;
      collectSlice(lhs, slice);
      bool fusible = llvm::all_of(cell.getStateArgs(), [&](BlockArgument s) {
        return llvm::none_of(s.getUsers(),
                             [&](Operation *u) { return slice.contains(u); }) ||
               nextValueIsFusible(s);
      });
      if (fusible)
        candidates.insert(lhs);
    }
    if (candidates.empty())
      return;
    FailureOr<CellSignatureEditor> editor = CellSignatureEditor::create(cell);
    if (failed(editor))
      return;

    SmallVector<Value> newStates(yield.getStates());
    for (Value value : candidates) {
      llvm::SetVector<Operation *> slice;
      collectSlice(value, slice);
      llvm::DenseSet<Value> stateArgs(cell.getStateArgs().begin(),
                                      cell.getStateArgs().end());

      // The next step's value: the same ops on the new states.
      OpBuilder builder(yield);
      IRMapping inCell;
      // newStates holds, in order, the next value of every state argument,
      // those carried by earlier candidates included.
      for (auto [state, next] : llvm::zip(cell.getStateArgs(), newStates))
        inCell.map(state, next);
      newStates.push_back(
          cloneSlice(builder, slice.getArrayRef(), inCell, stateArgs, value));

      BlockArgument carried = editor->appendState(
          value.getType(), [&](OpBuilder &builder, Operation *application) {
            IRMapping atApplication;
            for (BlockArgument arg : cell.getBodyBlock().getArguments())
              if (!cell.isInputIndex(arg.getArgNumber()))
                atApplication.map(arg, editor->getOperandFor(application, arg));
            return cloneSlice(builder, slice.getArrayRef(), atApplication,
                              stateArgs, value);
          });
      value.replaceAllUsesWith(carried);
      ++numCarried;
    }
    OpBuilder builder(yield);
    YieldOp::create(builder, yield.getLoc(), yield.getOutputs(), newStates);
    yield.erase();
    eraseDeadOps(cell.getBodyBlock(), [](Operation *op) { return isPure(op); });
    editor->commit();
  }
};

} // namespace
