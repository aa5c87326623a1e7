//===- AccumulateIntoProjection.cpp - Recurrent GEMM onto the projection --===//
//
// After hoisting, an LSTM step adds two [B, N] tensors, the projected input
// row and the recurrent matmul's result, before its pointwise work. Making
// the matmul accumulate onto the projected row (one GEMM with beta = 1)
// saves the fused kernel a [B, N] read and the step a scratch buffer: the
// step becomes what cuDNN and hand-written code do.
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "SumTree.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"

namespace rnn {
#define GEN_PASS_DEF_ACCUMULATEINTOPROJECTION
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// Rewrites the sum rooted at `root` when one leaf is a matmul result and
/// another a cell input of the same [B, N] type used only here: the matmul
/// accumulates onto the input and the sum loses that leaf.
bool accumulateInSum(CellOp cell, AddOp root) {
  SmallVector<Value> leaves;
  SmallVector<AddOp> inner;
  collectSum(root, leaves, inner);
  MatmulOp matmul;
  for (Value leaf : leaves) {
    auto candidate = leaf.getDefiningOp<MatmulOp>();
    if (candidate && !candidate.getAcc() && candidate->hasOneUse() &&
        candidate.getType().getRank() == 2 &&
        isa<Float32Type, Float64Type>(candidate.getType().getElementType())) {
      matmul = candidate;
      break;
    }
  }
  if (!matmul)
    return false;
  Value projected;
  for (Value leaf : leaves) {
    auto arg = dyn_cast<BlockArgument>(leaf);
    if (arg && arg.getOwner() == &cell.getBodyBlock() &&
        cell.isInputIndex(arg.getArgNumber()) && arg.hasOneUse() &&
        arg.getType() == matmul.getType()) {
      projected = arg;
      break;
    }
  }
  if (!projected)
    return false;

  OpBuilder b(root);
  auto accumulating = MatmulOp::create(
      b, matmul.getLoc(), matmul.getType(), matmul.getLhs(), matmul.getRhs(),
      projected, matmul.getWeightInOutAttr(), matmul.getAllowTf32Attr());
  // The rest of the sum, starting from the [B, N] matmul so that every
  // partial sum keeps the full shape under broadcasting.
  Value sum = accumulating.getResult();
  for (Value leaf : leaves)
    if (leaf != matmul.getResult() && leaf != projected)
      sum = AddOp::create(b, root.getLoc(), sum, leaf);
  root.getResult().replaceAllUsesWith(sum);
  for (AddOp add : inner)
    add->erase();
  matmul->erase();
  return true;
}

struct AccumulateIntoProjectionPass
    : public rnn::impl::AccumulateIntoProjectionBase<
          AccumulateIntoProjectionPass> {
  void runOnOperation() override {
    for (CellOp cell : getOperation().getOps<CellOp>()) {
      SmallVector<AddOp> roots = sumRoots(cell.getBodyBlock());
      for (AddOp root : roots)
        if (accumulateInSum(cell, root))
          ++numAccumulating;
    }
  }
};

} // namespace
