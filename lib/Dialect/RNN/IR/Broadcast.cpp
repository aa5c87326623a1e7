//===- Broadcast.cpp - The dialect's one broadcasting rule ----------------===//

#include "rnn/Dialect/RNN/IR/Broadcast.h"

#include <algorithm>

using namespace mlir;

namespace rnn {

std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  llvm::SmallVector<int64_t> result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    // Walk from the trailing dimension; a missing leading dimension is 1.
    int64_t l = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t r = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    int64_t &out = result[rank - 1 - i];
    if (l == r)
      out = l;
    else if (l == 1)
      out = r;
    else if (r == 1)
      out = l;
    else
      // Unequal and neither is 1; this includes a dynamic size against a
      // static one other than 1, which could only be checked at run time.
      return std::nullopt;
  }
  return result;
}

bool broadcastsTo(llvm::ArrayRef<int64_t> operand,
                  llvm::ArrayRef<int64_t> result) {
  std::optional<llvm::SmallVector<int64_t>> shape =
      broadcastShapes(operand, result);
  return shape && llvm::ArrayRef<int64_t>(*shape) == result;
}

} // namespace rnn
