//===- HoistInputPointwise.cpp - Input-only pointwise work before the loop ===//
//
// rnn-hoist-input-projection moves the matmuls of the step input out of the
// loop; what a cell computes from the input alone beyond them (a gate
// sigmoid(x·W_zᵀ + b_z) that no state enters, a tanh(x) added to a
// pre-activation) is still recomputed at every step, on the critical path of
// the recurrence. The same rows come out of one pass over the whole input
// sequence before the loop, where all T·B rows run at once. This pass moves
// that work: only the values that state-dependent ops (or the yield) read
// cross into the loop, as per-step inputs.
//
//===----------------------------------------------------------------------===//

#include "InputSequence.h"

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace rnn {
#define GEN_PASS_DEF_HOISTINPUTPOINTWISE
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// Ops that only pick columns: inside a fused group they are reads at
/// offsets and cost nothing, while over a sequence they would be copies. The
/// values they read cross into the loop instead of their pieces.
bool isLayout(Operation *op) { return isa<SplitOp, ConcatOp>(op); }

/// Ops worth a pass over the whole sequence. Additions, products, casts and
/// selections of inputs with parameters cost one instruction each inside
/// the fused group that reads them; computed before the loop they would
/// cost a kernel of their own and a [T, B, N] buffer (function-level ops are
/// not fused), for no gain in the step. Transcendentals, divisions and
/// matmuls are what a step should not repeat.
bool isWorthHoisting(Operation *op) {
  return isa<SigmoidOp, TanhOp, ExpOp, LogOp, SqrtOp, RsqrtOp, DivOp,
             MatmulOp>(op);
}

/// Row reductions stay in the step for now: outside a cell they are not
/// fused, and a layer normalisation over the sequence lowers to a dozen
/// kernels and as many [T, B, N] buffers per call (CUDA), where in the step
/// it is a few reductions inside the fused group's kernel.
bool isRowReduction(Operation *op) {
  return isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, LayerNormOp>(op);
}

/// The values of `cell` that depend on its inputs, parameters and constants
/// alone, through ops that run over a sequence, mapped to whether an input
/// is among their sources. One walk in program order, so that shared
/// subexpressions are classified once.
llvm::DenseMap<Value, bool> classifyInputOnly(CellOp cell) {
  llvm::DenseMap<Value, bool> readsInput;
  for (BlockArgument arg : cell.getBodyBlock().getArguments()) {
    if (cell.isInputIndex(arg.getArgNumber()))
      readsInput[arg] = true;
    else if (cell.isParamIndex(arg.getArgNumber()))
      readsInput[arg] = false;
  }
  for (Operation &op : cell.getBodyBlock().without_terminator()) {
    if (!isPure(&op) || !isRankPolymorphic(&op))
      continue;
    bool allKnown = true, reads = false;
    for (Value operand : op.getOperands()) {
      auto it = readsInput.find(operand);
      if (it == readsInput.end()) {
        allKnown = false;
        break;
      }
      reads |= it->second;
    }
    // A matmul runs over a sequence only with a weight that is the same at
    // every step, and never accumulating onto a per-step value.
    if (auto matmul = dyn_cast<MatmulOp>(&op))
      allKnown &= !matmul.getAcc() && !readsInput.lookup(matmul.getRhs());
    if (!allKnown)
      continue;
    for (Value result : op.getResults())
      readsInput[result] = reads;
  }
  return readsInput;
}

/// The first value, in program order, that should cross into the loop
/// instead of being computed in it; null when there is none.
Value findNextToHoist(CellOp cell) {
  llvm::DenseMap<Value, bool> readsInput = classifyInputOnly(cell);
  Block &block = cell.getBodyBlock();

  // The ops that stay in the loop: those that depend on a state (or cannot
  // run over a sequence), the yield, and layout ops that one of them reads.
  // Users come after their operands, so one walk from the end decides.
  llvm::DenseSet<Operation *> inLoop;
  for (Operation &op : llvm::reverse(block)) {
    bool inputOnly = op.getNumResults() != 0 &&
                     llvm::all_of(op.getResults(), [&](Value result) {
                       return readsInput.contains(result);
                     });
    bool readInLoop = llvm::any_of(
        op.getUsers(), [&](Operation *user) { return inLoop.contains(user); });
    if (!inputOnly || (isLayout(&op) && readInLoop))
      inLoop.insert(&op);
  }

  for (Operation &op : block.without_terminator()) {
    if (inLoop.contains(&op))
      continue;
    for (Value result : op.getResults()) {
      if (!readsInput.lookup(result) ||
          llvm::none_of(result.getUsers(),
                        [&](Operation *user) { return inLoop.contains(user); }))
        continue;
      llvm::SetVector<Operation *> slice;
      collectSlice(result, slice);
      if (llvm::any_of(slice, isWorthHoisting) &&
          llvm::none_of(slice, isRowReduction))
        return result;
    }
  }
  return {};
}

struct HoistInputPointwisePass
    : public rnn::impl::HoistInputPointwiseBase<HoistInputPointwisePass> {
  void runOnOperation() override {
    editCells(getOperation(), [&](CellOp cell, CellSignatureEditor &editor) {
      // One value at a time: once a value reads a hoisted one, what is left
      // of its computation in the loop may no longer be worth a pass of its
      // own (sigmoid(x) hoisted, sigmoid(x) * 2 then stays).
      while (Value value = findNextToHoist(cell)) {
        BlockArgument hoisted = editor.appendInput(
            value.getType(), [&](OpBuilder &builder, Operation *application) {
              return cloneOverApplication(editor, builder, application, value);
            });
        value.replaceAllUsesWith(hoisted);
        ++numHoisted;
      }
      numOpsMoved += eraseDeadOps(cell.getBodyBlock(),
                                  [](Operation *op) { return isPure(op); });
      editor.dropUnusedArguments();
    });
  }
};

} // namespace
