//===- SumTree.cpp - Sums of single-use additions in a cell ---------------===//

#include "SumTree.h"

using namespace mlir;

namespace rnn {

void collectSum(AddOp root, SmallVectorImpl<Value> &leaves,
                SmallVectorImpl<AddOp> &inner) {
  inner.push_back(root);
  for (Value operand : root->getOperands()) {
    auto add = operand.getDefiningOp<AddOp>();
    if (add && add->hasOneUse())
      collectSum(add, leaves, inner);
    else
      leaves.push_back(operand);
  }
}

SmallVector<AddOp> sumRoots(Block &block) {
  SmallVector<AddOp> roots;
  for (AddOp add : block.getOps<AddOp>()) {
    bool feedsSum = add->hasOneUse() && isa<AddOp>(*add->getUsers().begin());
    if (!feedsSum)
      roots.push_back(add);
  }
  return roots;
}

} // namespace rnn
