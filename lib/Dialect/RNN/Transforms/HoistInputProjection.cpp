//===- HoistInputProjection.cpp - Input matmuls over the whole sequence ---===//

#include "InputSequence.h"

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace rnn {
#define GEN_PASS_DEF_HOISTINPUTPROJECTION
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

struct HoistInputProjectionPass
    : public rnn::impl::HoistInputProjectionBase<HoistInputProjectionPass> {
  void runOnOperation() override {
    editCells(getOperation(), [&](CellOp cell, CellSignatureEditor &editor) {
      // Products of a cell input with a parameter weight: dense, or
      // head-wise (a block-diagonal input projection).
      SmallVector<Operation *> projections;
      for (Operation &op : cell.getBodyBlock()) {
        Value lhs, weight;
        if (auto matmul = dyn_cast<MatmulOp>(&op); matmul && !matmul.getAcc())
          lhs = matmul.getLhs(), weight = matmul.getRhs();
        else if (auto headwise = dyn_cast<HeadwiseMatmulOp>(&op))
          lhs = headwise.getLhs(), weight = headwise.getRhs();
        else
          continue;
        bool readsInput = false;
        auto rhs = dyn_cast<BlockArgument>(weight);
        bool rhsIsParam = rhs && cell.isParamIndex(rhs.getArgNumber());
        if (rhsIsParam && isInputOnly(cell, lhs, readsInput) && readsInput)
          projections.push_back(&op);
      }
      for (Operation *op : projections) {
        Value result = op->getResult(0);
        BlockArgument projected = editor.appendInput(
            result.getType(), [&](OpBuilder &builder, Operation *application) {
              return cloneOverApplication(editor, builder, application, result);
            });
        result.replaceAllUsesWith(projected);
        ++numHoisted;
      }
      // The projections and whatever only fed them are dead in the cell now.
      eraseDeadOps(cell.getBodyBlock(),
                   [](Operation *op) { return isPure(op); });
      editor.dropUnusedArguments();
    });
  }
};

} // namespace
