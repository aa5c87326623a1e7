//===- SumTree.h - Sums of single-use additions in a cell -------*- C++ -*-===//
//
// A cell spells a sum of several terms as a tree of rnn.add ops, each read
// only by the next. The passes that rewrite such sums
// (rnn-accumulate-into-projection, rnn-concat-summed-matmuls) read it as one
// sum of leaves.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_DIALECT_RNN_TRANSFORMS_SUMTREE_H
#define RNN_LIB_DIALECT_RNN_TRANSFORMS_SUMTREE_H

#include "rnn/Dialect/RNN/IR/RNNOps.h"

namespace rnn {

/// The leaves of the tree of single-use rnn.add ops rooted at `root`, in
/// operand order, and the tree's inner adds (`root` first).
void collectSum(AddOp root, llvm::SmallVectorImpl<mlir::Value> &leaves,
                llvm::SmallVectorImpl<AddOp> &inner);

/// The roots of the sums in `block`: adds whose result is not itself a term
/// of a larger sum.
llvm::SmallVector<AddOp> sumRoots(mlir::Block &block);

} // namespace rnn

#endif // RNN_LIB_DIALECT_RNN_TRANSFORMS_SUMTREE_H
