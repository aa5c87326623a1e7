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
      SmallVector<MatmulOp> projections;
      for (MatmulOp matmul : cell.getBodyBlock().getOps<MatmulOp>()) {
        bool readsInput = false;
        auto rhs = dyn_cast<BlockArgument>(matmul.getRhs());
        bool rhsIsParam = rhs && cell.isParamIndex(rhs.getArgNumber());
        if (rhsIsParam && !matmul.getAcc() &&
            isInputOnly(cell, matmul.getLhs(), readsInput) && readsInput)
          projections.push_back(matmul);
      }
      for (MatmulOp matmul : projections) {
        BlockArgument projected = editor.appendInput(
            matmul.getType(), [&](OpBuilder &builder, Operation *application) {
              return cloneOverApplication(editor, builder, application,
                                          matmul.getResult());
            });
        matmul.getResult().replaceAllUsesWith(projected);
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
