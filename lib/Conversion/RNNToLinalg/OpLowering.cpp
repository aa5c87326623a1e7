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

/// A matmul becomes a contraction over the rows: a linalg.generic with the
/// leading dimensions and N parallel and K reduced, marked with the weight
/// layout so that the library-GEMM lowering can turn it into one GEMM call
/// (all T·B rows of a hoisted projection at once). Unconverted, it lowers to
/// correct loops.
static Value lowerMatmul(OpBuilder &b, MatmulOp matmul) {
  Location loc = matmul.getLoc();
  MLIRContext *context = b.getContext();
  Value lhs = matmul.getLhs();
  RankedTensorType resultType = matmul.getType();
  int64_t rank = resultType.getRank();
  Type element = resultType.getElementType();

  // Dimensions: the leading ones, then n, then k.
  SmallVector<AffineExpr> leading;
  for (int64_t d = 0; d + 1 < rank; ++d)
    leading.push_back(getAffineDimExpr(d, context));
  AffineExpr n = getAffineDimExpr(rank - 1, context);
  AffineExpr k = getAffineDimExpr(rank, context);
  SmallVector<AffineExpr> lhsExprs(leading), outExprs(leading);
  lhsExprs.push_back(k);
  outExprs.push_back(n);
  AffineMap weightMap = matmul.getWeightInOut()
                            ? AffineMap::get(rank + 1, 0, {k, n}, context)
                            : AffineMap::get(rank + 1, 0, {n, k}, context);
  SmallVector<AffineMap> maps{AffineMap::get(rank + 1, 0, lhsExprs, context),
                              weightMap,
                              AffineMap::get(rank + 1, 0, outExprs, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);

  // The contraction accumulates onto its init: `acc`, or zeros.
  Value filled = matmul.getAcc();
  if (!filled) {
    Value init = emptyLike(b, loc, resultType, lhs);
    Value zero =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
    filled = linalg::FillOp::create(b, loc, zero, init).getResult(0);
  }
  auto contraction = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{lhs, matmul.getRhs()},
      ValueRange{filled}, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value x = args[0], w = args[1];
        if (x.getType() != element) {
          x = arith::ExtFOp::create(nb, l, element, x);
          w = arith::ExtFOp::create(nb, l, element, w);
        }
        Value product = arith::MulFOp::create(nb, l, x, w);
        linalg::YieldOp::create(
            nb, l, Value(arith::AddFOp::create(nb, l, args[2], product)));
      });
  contraction->setAttr(kGemmWeightLayoutAttr,
                       b.getI32IntegerAttr(matmul.getWeightInOut() ? 1 : 0));
  if (matmul.getAllowTf32())
    contraction->setAttr(kGemmAllowTf32Attr, b.getUnitAttr());
  return contraction.getResult(0);
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
          Value c =
              arith::ConstantOp::create(nb, l, nb.getFloatAttr(element, by));
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
  return elementwise(b, loc, type, {centred, variance},
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       Value eps = arith::ConstantOp::create(
                           nb, l, nb.getFloatAttr(element, epsilon));
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
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    offsets[axis] = b.getIndexAttr(offset);
    SmallVector<OpFoldResult> sizes = mixedSizes(b, loc, pieceType, input);
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
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    offsets[axis] = b.getIndexAttr(offset);
    SmallVector<OpFoldResult> sizes = mixedSizes(b, loc, pieceType, piece);
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
    return SmallVector<Value>{
        elementwise(b, loc, resultType, op->getOperands(),
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
