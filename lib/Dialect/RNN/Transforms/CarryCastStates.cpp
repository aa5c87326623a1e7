//===- CarryCastStates.cpp - Cast a state where it is computed ------------===//
//
// A bf16 LSTM or GRU keeps h in f32 and casts it to bf16 for the recurrent
// matmul at the start of every step: a pointwise kernel of its own, between
// the previous step's fused kernel and the GEMM. Carrying the cast value as
// a state of its own moves the cast to the end of the step, where it joins
// the fused kernel that computes h: one kernel per step less, and the
// values are the same (a cast is a cast wherever it runs). Where the cell
// also reads h itself (the GRU), both are carried: the kernel stores h
// twice, which costs far less than a launch.
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "CellSignature.h"

#include "rnn/Dialect/RNN/IR/RNNOps.h"

namespace rnn {
#define GEN_PASS_DEF_CARRYCASTSTATES
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// The type that every cast of `state` casts it to, when there is at least
/// one cast and all casts agree; null otherwise. Other reads of the state
/// (a GRU's z⊙h) keep reading it.
Type castType(BlockArgument state) {
  Type target;
  for (Operation *user : state.getUsers()) {
    auto cast = dyn_cast<CastOp>(user);
    if (!cast)
      continue;
    if (target && cast.getType() != target)
      return {};
    target = cast.getType();
  }
  return target;
}

/// `value`'s type with the element type of `like`.
RankedTensorType withElementOf(Value value, Type like) {
  return cast<RankedTensorType>(value.getType())
      .clone(cast<RankedTensorType>(like).getElementType());
}

struct CarryCastStatesPass
    : public rnn::impl::CarryCastStatesBase<CarryCastStatesPass> {
  void runOnOperation() override {
    SmallVector<CellOp> cells(getOperation().getOps<CellOp>());
    for (CellOp cell : cells) {
      SmallVector<std::pair<BlockArgument, Type>> candidates;
      for (BlockArgument state : cell.getStateArgs())
        if (Type target = castType(state))
          candidates.push_back({state, target});
      if (candidates.empty())
        continue;
      FailureOr<CellSignatureEditor> editor = CellSignatureEditor::create(cell);
      if (failed(editor))
        continue;
      YieldOp yield = cell.getYield();
      SmallVector<Value> newStates(yield.getStates());
      for (auto [state, target] : candidates) {
        unsigned index = state.getArgNumber() - cell.getNumInputs();
        BlockArgument carried = editor->appendState(
            target, [&](OpBuilder &builder, Operation *application) {
              Value init = editor->getOperandFor(application, state);
              return CastOp::create(builder, application->getLoc(),
                                    withElementOf(init, target), init)
                  .getResult();
            });
        for (Operation *user : llvm::make_early_inc_range(state.getUsers())) {
          if (!isa<CastOp>(user))
            continue;
          user->getResult(0).replaceAllUsesWith(carried);
          user->erase();
        }
        // The next step's value: the new state, cast where it is computed.
        OpBuilder builder(yield);
        Value next = yield.getStates()[index];
        newStates.push_back(CastOp::create(builder, yield.getLoc(),
                                           withElementOf(next, target), next));
        ++numCarried;
      }
      OpBuilder builder(yield);
      YieldOp::create(builder, yield.getLoc(), yield.getOutputs(), newStates);
      yield.erase();
      editor->commit();
    }
  }
};

} // namespace
