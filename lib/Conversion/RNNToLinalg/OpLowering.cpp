//===- OpLowering.cpp - rnn ops to tensor-level code ----------------------===//

#include "Lowering.h"

#include "rnn/Dialect/RNN/IR/ScalarSemantics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace rnn {
namespace lowering {

static Value lowerMatmul(OpBuilder &b, MatmulOp matmul) {
  Location loc = matmul.getLoc();
  MLIRContext *context = b.getContext();
  Value lhs = matmul.getLhs();
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  RankedTensorType resultType = matmul.getType();
  int64_t rank = lhsType.getRank();

  // Rows [..., K] become one [M, K] matrix: a whole sequence is one GEMM.
  if (rank > 2) {
    SmallVector<ReassociationIndices> reassociation(2);
    for (int64_t d = 0; d + 1 < rank; ++d)
      reassociation[0].push_back(d);
    reassociation[1].push_back(rank - 1);
    lhs = tensor::CollapseShapeOp::create(b, loc, lhs, reassociation);
  }
  auto lhs2d = cast<RankedTensorType>(lhs.getType());
  auto result2dType = RankedTensorType::get(
      {lhs2d.getDimSize(0), matmul.getOutputSize()},
      resultType.getElementType());
  Value init = emptyLike(b, loc, result2dType, lhs);
  Value zero = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(resultType.getElementType(), 0.0));
  Value filled = linalg::FillOp::create(b, loc, zero, init).getResult(0);

  AffineExpr m = getAffineDimExpr(0, context), n = getAffineDimExpr(1, context),
             k = getAffineDimExpr(2, context);
  AffineMap weightMap = matmul.getWeightInOut()
                            ? AffineMap::get(3, 0, {k, n}, context)
                            : AffineMap::get(3, 0, {n, k}, context);
  SmallVector<Attribute> maps{
      AffineMapAttr::get(AffineMap::get(3, 0, {m, k}, context)),
      AffineMapAttr::get(weightMap),
      AffineMapAttr::get(AffineMap::get(3, 0, {m, n}, context))};
  auto product = linalg::MatmulOp::create(
      b, loc, TypeRange{result2dType}, ValueRange{lhs, matmul.getRhs()},
      ValueRange{filled},
      {b.getNamedAttr("indexing_maps", b.getArrayAttr(maps))});
  Value result = product.getResult(0);
  if (rank > 2) {
    SmallVector<ReassociationIndices> reassociation(2);
    for (int64_t d = 0; d + 1 < rank; ++d)
      reassociation[0].push_back(d);
    reassociation[1].push_back(rank - 1);
    SmallVector<OpFoldResult> outputShape;
    for (int64_t d = 0; d < rank; ++d) {
      if (resultType.isDynamicDim(d))
        outputShape.push_back(
            tensor::DimOp::create(b, loc, matmul.getLhs(), d).getResult());
      else
        outputShape.push_back(b.getIndexAttr(resultType.getDimSize(d)));
    }
    result = tensor::ExpandShapeOp::create(b, loc, resultType, result,
                                           reassociation, outputShape);
  }
  return result;
}

static Value lowerLayerNorm(OpBuilder &b, LayerNormOp norm) {
  Location loc = norm.getLoc();
  Value x = norm.getInput();
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType();
  double width = static_cast<double>(type.getShape().back());
  auto divideBy = [&](Value v, double by) {
    return elementwise(
        b, loc, cast<RankedTensorType>(v.getType()), v,
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value c = arith::ConstantOp::create(nb, l, nb.getFloatAttr(element, by));
          return arith::DivFOp::create(nb, l, args[0], c);
        });
  };
  Value mean = divideBy(reduceRows(b, loc, x, /*isMax=*/false), width);
  Value centred = elementwise(
      b, loc, type, {x, mean}, [&](OpBuilder &nb, Location l, ValueRange a) {
        return Value(arith::SubFOp::create(nb, l, a[0], a[1]));
      });
  Value squares = elementwise(
      b, loc, type, centred, [&](OpBuilder &nb, Location l, ValueRange a) {
        return Value(arith::MulFOp::create(nb, l, a[0], a[0]));
      });
  Value variance =
      divideBy(reduceRows(b, loc, squares, /*isMax=*/false), width);
  double epsilon = norm.getEpsilon().convertToDouble();
  return elementwise(
      b, loc, type, {centred, variance},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value eps =
            arith::ConstantOp::create(nb, l, nb.getFloatAttr(element, epsilon));
        Value scale = math::RsqrtOp::create(
            nb, l, arith::AddFOp::create(nb, l, a[1], eps));
        return arith::MulFOp::create(nb, l, a[0], scale);
      });
}

static SmallVector<Value> lowerSplit(OpBuilder &b, SplitOp split) {
  Location loc = split.getLoc();
  Value input = split.getInput();
  auto type = cast<RankedTensorType>(input.getType());
  int64_t axis = split.getSplitAxis();
  SmallVector<Value> pieces;
  int64_t offset = 0;
  for (Value result : split.getResults()) {
    auto pieceType = cast<RankedTensorType>(result.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes, strides(type.getRank(),
                                             b.getIndexAttr(1));
    offsets[axis] = b.getIndexAttr(offset);
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(pieceType.isDynamicDim(d)
                          ? OpFoldResult(tensor::DimOp::create(b, loc, input, d)
                                             .getResult())
                          : OpFoldResult(b.getIndexAttr(
                                pieceType.getDimSize(d))));
    pieces.push_back(tensor::ExtractSliceOp::create(b, loc, pieceType, input,
                                                    offsets, sizes, strides));
    offset += pieceType.getDimSize(axis);
  }
  return pieces;
}

static Value lowerConcat(OpBuilder &b, ConcatOp concat) {
  Location loc = concat.getLoc();
  RankedTensorType type = concat.getType();
  int64_t axis = concat.getConcatAxis();
  Value result = emptyLike(b, loc, type, concat.getInputs());
  int64_t offset = 0;
  for (Value piece : concat.getInputs()) {
    auto pieceType = cast<RankedTensorType>(piece.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes, strides(type.getRank(),
                                             b.getIndexAttr(1));
    offsets[axis] = b.getIndexAttr(offset);
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(pieceType.isDynamicDim(d)
                          ? OpFoldResult(tensor::DimOp::create(b, loc, piece, d)
                                             .getResult())
                          : OpFoldResult(b.getIndexAttr(
                                pieceType.getDimSize(d))));
    result = tensor::InsertSliceOp::create(b, loc, piece, result, offsets,
                                           sizes, strides);
    offset += pieceType.getDimSize(axis);
  }
  return result;
}

FailureOr<SmallVector<Value>> lowerOp(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  if (isElementwise(op)) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Type element = resultType.getElementType();
    return SmallVector<Value>{elementwise(
        b, loc, resultType, op->getOperands(),
        [&](OpBuilder &nb, Location l, ValueRange args) {
          return buildScalarElementwise(nb, l, op, args, element);
        })};
  }
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    RankedTensorType type = constant.getType();
    Attribute splat = b.getFloatAttr(type.getElementType(),
                                     constant.getValue().convertToDouble());
    auto attr = DenseElementsAttr::get(type, splat);
    return SmallVector<Value>{
        arith::ConstantOp::create(b, loc, type, attr).getResult()};
  }
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return SmallVector<Value>{lowerMatmul(b, matmul)};
  if (auto split = dyn_cast<SplitOp>(op))
    return lowerSplit(b, split);
  if (auto concat = dyn_cast<ConcatOp>(op))
    return SmallVector<Value>{lowerConcat(b, concat)};
  if (auto norm = dyn_cast<LayerNormOp>(op))
    return SmallVector<Value>{lowerLayerNorm(b, norm)};
  if (isa<ReduceSumOp, ReduceMaxOp, ReduceMeanOp>(op)) {
    Value input = op->getOperand(0);
    Value reduced = reduceRows(b, loc, input, isa<ReduceMaxOp>(op));
    if (!isa<ReduceMeanOp>(op))
      return SmallVector<Value>{reduced};
    auto inputType = cast<RankedTensorType>(input.getType());
    Type element = inputType.getElementType();
    double width = static_cast<double>(inputType.getShape().back());
    return SmallVector<Value>{elementwise(
        b, loc, cast<RankedTensorType>(reduced.getType()), reduced,
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value c =
              arith::ConstantOp::create(nb, l, nb.getFloatAttr(element, width));
          return arith::DivFOp::create(nb, l, args[0], c);
        })};
  }
  if (auto group = dyn_cast<PointwiseOp>(op))
    return lowerPointwiseGroup(b, group);
  return failure();
}

} // namespace lowering
} // namespace rnn
