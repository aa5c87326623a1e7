//===- HeadwiseMatmulOp.cpp - rnn.headwise_matmul, its weight gradient ----===//
//
// The block-diagonal product and its weight gradient share one shape rule:
// a weight [NH, G·N, K], a head-major side [..., NH·K] and a gate-major side
// [..., G·NH·N].
//
//===----------------------------------------------------------------------===//

#include "ProductTypes.h"

#include "rnn/Dialect/RNN/IR/RNNOps.h"

using namespace mlir;
using namespace rnn;

static bool isStaticRows(RankedTensorType type) {
  return type.getRank() >= 2 && !type.isDynamicDim(type.getRank() - 1);
}

int64_t HeadwiseMatmulOp::getNumHeads() {
  return cast<RankedTensorType>(getRhs().getType()).getDimSize(0);
}

int64_t HeadwiseMatmulOp::getHeadOutputSize() {
  int64_t gates = getGates();
  return cast<RankedTensorType>(getRhs().getType()).getDimSize(1) / gates;
}

int64_t HeadwiseMatmulOp::getHeadInputSize() {
  return cast<RankedTensorType>(getRhs().getType()).getDimSize(2);
}

/// Checks the weight [NH, G·N, K] of an op with `gates` = G.
static LogicalResult verifyHeadwiseWeight(Operation *op, StringRef name,
                                          RankedTensorType weight,
                                          int64_t gates) {
  if (weight.getRank() != 3 || !weight.hasStaticShape())
    return op->emitOpError()
           << name << " has type " << weight
           << "; expected a static 3-D weight [NH, G·N, K] (each head's "
              "[out, in] matrix)";
  if (weight.getDimSize(1) % gates != 0)
    return op->emitOpError()
           << name << " " << weight << " has " << weight.getDimSize(1)
           << " rows per head, not a multiple of gates = " << gates;
  return success();
}

LogicalResult HeadwiseMatmulOp::verify() {
  int64_t gates = getGates();
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  auto rhs = cast<RankedTensorType>(getRhs().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (!isStaticRows(lhs))
    return emitOpError() << "lhs has type " << lhs
                         << "; expected rows of rank 2 or more with a static "
                            "last size";
  if (failed(verifyHeadwiseWeight(*this, "rhs", rhs, gates)))
    return failure();
  int64_t heads = getNumHeads(), n = getHeadOutputSize(),
          k = getHeadInputSize();
  int64_t gateMajor = gates * heads * n, headMajor = heads * k;
  int64_t in = getTransposed() ? gateMajor : headMajor;
  int64_t out = getTransposed() ? headMajor : gateMajor;
  int64_t width = lhs.getShape().back();
  if (width != in)
    return emitOpError() << "lhs " << lhs << " has " << width
                         << " columns but rhs " << rhs
                         << " with gates = " << gates << " takes "
                         << (getTransposed() ? "G·NH·N = " : "NH·K = ") << in;

  Type resultElement = result.getElementType();
  if (failed(
          verifyProductTypes(*this, lhs, rhs, resultElement, getAllowTf32())))
    return failure();

  SmallVector<int64_t> expectedShape(lhs.getShape().drop_back());
  expectedShape.push_back(out);
  if (result.getShape() != ArrayRef<int64_t>(expectedShape))
    return emitOpError() << "result has type " << result << " but " << lhs
                         << " times the heads of " << rhs
                         << (getTransposed() ? " transposed" : "")
                         << " with gates = " << gates << " gives "
                         << RankedTensorType::get(expectedShape, resultElement);
  return success();
}

LogicalResult HeadwiseOuterSumOp::verify() {
  int64_t gates = getGates();
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  auto rhs = cast<RankedTensorType>(getRhs().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  for (auto [name, type] :
       {std::pair<StringRef, RankedTensorType>{"lhs", lhs}, {"rhs", rhs}})
    if (!isStaticRows(type))
      return emitOpError() << name << " has type " << type
                           << "; expected rows of rank 2 or more with a "
                              "static last size";
  if (failed(verifySameRows(*this, lhs, rhs)))
    return failure();
  if (failed(verifyHeadwiseWeight(*this, "result", result, gates)))
    return failure();
  if (failed(verifyProductTypes(*this, lhs, rhs, result.getElementType(),
                                getAllowTf32())))
    return failure();
  int64_t heads = result.getDimSize(0), k = result.getDimSize(2);
  int64_t n = result.getDimSize(1) / gates;
  if (lhs.getShape().back() != gates * heads * n ||
      rhs.getShape().back() != heads * k)
    return emitOpError() << "result has type " << result << " (NH = " << heads
                         << ", N = " << n << ", K = " << k
                         << ", gates = " << gates << ") but lhs " << lhs
                         << " should have G·NH·N = " << gates * heads * n
                         << " columns and rhs " << rhs
                         << " NH·K = " << heads * k;
  return success();
}
