//===- GradientOps.cpp - Ops the derived backward builds ------------------===//
//
// rnn.sum_to (the adjoint of broadcasting) and rnn.outer_sum (a weight
// gradient over all rows). rnn.heaviside and rnn.zeros_like are plain
// elementwise ops with no verifier of their own.
//
//===----------------------------------------------------------------------===//

#include "ProductTypes.h"

#include "rnn/Dialect/RNN/IR/Broadcast.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"

using namespace mlir;
using namespace rnn;

LogicalResult SumToOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  Type inElement = input.getElementType(), outElement = result.getElementType();
  bool widened =
      (inElement.isBF16() || inElement.isF16()) && outElement.isF32();
  if (inElement != outElement && !widened)
    return emitOpError() << "result " << result
                         << " must have the element type of the input " << input
                         << " (or f32 for an f16 or bf16 input)";
  if (!broadcastsTo(result.getShape(), input.getShape()))
    return emitOpError() << "result " << result
                         << " does not broadcast to the input " << input
                         << ": aligned at the trailing dimension, each result "
                            "size must equal the input's or be 1";
  return success();
}

OpFoldResult SumToOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

LogicalResult OuterSumOp::verify() {
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  auto rhs = cast<RankedTensorType>(getRhs().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  for (auto [name, type] :
       {std::pair<StringRef, RankedTensorType>{"lhs", lhs}, {"rhs", rhs}})
    if (type.getRank() < 2 || type.isDynamicDim(type.getRank() - 1))
      return emitOpError() << name << " has type " << type
                           << "; expected rows [..., N] of rank 2 or more "
                              "with a static last size";
  if (failed(verifySameRows(*this, lhs, rhs)))
    return failure();
  Type resultElement = result.getElementType();
  if (failed(
          verifyProductTypes(*this, lhs, rhs, resultElement, getAllowTf32())))
    return failure();
  SmallVector<int64_t> expected{lhs.getShape().back(), rhs.getShape().back()};
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result has type " << result
                         << " but the outer products of " << lhs << " and "
                         << rhs << " are "
                         << RankedTensorType::get(expected, resultElement);
  return success();
}

LogicalResult PreviousStatesOp::verify() {
  auto sequence = cast<RankedTensorType>(getSequence().getType());
  auto init = cast<RankedTensorType>(getInit().getType());
  if (sequence.getRank() != 3 || sequence.isDynamicDim(2))
    return emitOpError() << "sequence has type " << sequence
                         << "; expected [T, B, N] with a static N";
  auto sameSize = [](int64_t a, int64_t b) {
    return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
  };
  if (init.getRank() != 2 ||
      init.getElementType() != sequence.getElementType() ||
      !sameSize(init.getDimSize(0), sequence.getDimSize(1)) ||
      init.getDimSize(1) != sequence.getDimSize(2))
    return emitOpError() << "init has type " << init << "; expected "
                         << RankedTensorType::get({sequence.getDimSize(1),
                                                   sequence.getDimSize(2)},
                                                  sequence.getElementType())
                         << " for the sequence " << sequence;
  if (Value lengths = getLengths()) {
    auto type = cast<RankedTensorType>(lengths.getType());
    if (!sameSize(type.getDimSize(0), sequence.getDimSize(1)))
      return emitOpError() << "lengths " << type
                           << " do not have one entry per row of " << sequence;
  }
  return success();
}

LogicalResult rnn::verifySameRows(Operation *op, RankedTensorType lhs,
                                  RankedTensorType rhs) {
  if (lhs.getRank() != rhs.getRank())
    return op->emitOpError() << "lhs " << lhs << " and rhs " << rhs
                             << " must have the same rows (ranks differ)";
  for (int64_t d = 0; d + 1 < lhs.getRank(); ++d) {
    int64_t a = lhs.getDimSize(d), b = rhs.getDimSize(d);
    if (a != b && !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b))
      return op->emitOpError()
             << "lhs " << lhs << " and rhs " << rhs
             << " must have the same rows (dimension " << d << " differs)";
  }
  return success();
}
