//===- MatmulOp.cpp - rnn.matmul ------------------------------------------===//

#include "ProductTypes.h"

#include "rnn/Dialect/RNN/IR/RNNOps.h"

using namespace mlir;
using namespace rnn;

int64_t MatmulOp::getContractionSize() {
  auto rhs = cast<RankedTensorType>(getRhs().getType());
  return rhs.getDimSize(getWeightInOut() ? 0 : 1);
}

int64_t MatmulOp::getOutputSize() {
  auto rhs = cast<RankedTensorType>(getRhs().getType());
  return rhs.getDimSize(getWeightInOut() ? 1 : 0);
}

LogicalResult MatmulOp::verify() {
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  auto rhs = cast<RankedTensorType>(getRhs().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  StringRef layout = getWeightInOut() ? "[K, N] (weight_in_out)"
                                      : "[N, K] (PyTorch's [out, in])";
  if (lhs.getRank() < 2 || lhs.isDynamicDim(lhs.getRank() - 1))
    return emitOpError() << "lhs has type " << lhs
                         << "; expected rows [..., K] of rank 2 or more with "
                            "a static K";
  if (rhs.getRank() != 2 || !rhs.hasStaticShape())
    return emitOpError() << "rhs has type " << rhs
                         << "; expected a static 2-D weight " << layout;
  int64_t k = lhs.getDimSize(lhs.getRank() - 1);
  if (getContractionSize() != k)
    return emitOpError() << "contraction sizes differ: lhs " << lhs
                         << " has K = " << k << " but rhs " << rhs
                         << " laid out " << layout
                         << " has K = " << getContractionSize();

  Type resultElement = result.getElementType();
  if (failed(
          verifyProductTypes(*this, lhs, rhs, resultElement, getAllowTf32())))
    return failure();

  if (Value acc = getAcc(); acc && acc.getType() != result)
    return emitOpError() << "acc has type " << acc.getType()
                         << " but the result has type " << result;

  SmallVector<int64_t> expectedShape(lhs.getShape().drop_back());
  expectedShape.push_back(getOutputSize());
  if (result.getShape() != ArrayRef<int64_t>(expectedShape))
    return emitOpError() << "result has type " << result << " but " << lhs
                         << " times " << rhs << " laid out " << layout
                         << " gives "
                         << RankedTensorType::get(expectedShape, resultElement);
  return success();
}

LogicalResult rnn::verifyProductTypes(Operation *op, RankedTensorType lhs,
                                      RankedTensorType rhs, Type resultElement,
                                      bool allowTf32) {
  Type element = lhs.getElementType();
  if (rhs.getElementType() != element)
    return op->emitOpError()
           << "operand element types differ: lhs " << lhs << ", rhs " << rhs;
  bool widening =
      resultElement.isF32() && (element.isF16() || element.isBF16());
  if (resultElement != element && !widening)
    return op->emitOpError() << "result element type " << resultElement
                             << " must be the operands' " << element
                             << " (or f32 for f16/bf16 operands)";
  if (allowTf32 && !element.isF32())
    return op->emitOpError()
           << "allow_tf32 applies to f32 operands only, not " << element;
  return success();
}
