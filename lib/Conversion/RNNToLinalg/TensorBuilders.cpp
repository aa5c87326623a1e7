//===- TensorBuilders.cpp - linalg and tensor building blocks -------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;

namespace rnn {
namespace lowering {

SmallVector<Value> dynamicSizes(OpBuilder &b, Location loc,
                                RankedTensorType type, ValueRange sources) {
  SmallVector<Value> sizes;
  int64_t rank = type.getRank();
  for (int64_t d = 0; d < rank; ++d) {
    if (!type.isDynamicDim(d))
      continue;
    Value size;
    for (Value source : sources) {
      auto sourceType = cast<RankedTensorType>(source.getType());
      int64_t aligned = d - (rank - sourceType.getRank());
      if (aligned < 0 || !sourceType.isDynamicDim(aligned))
        continue;
      size = tensor::DimOp::create(b, loc, source, aligned);
      break;
    }
    assert(size && "a dynamic size has a dynamic source (verified shapes)");
    sizes.push_back(size);
  }
  return sizes;
}

SmallVector<OpFoldResult> mixedSizes(OpBuilder &b, Location loc,
                                     RankedTensorType type, Value source,
                                     int64_t sourceOffset) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? OpFoldResult(tensor::DimOp::create(b, loc, source,
                                                             d + sourceOffset)
                                           .getResult())
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  return sizes;
}

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType type,
                ValueRange sources) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(),
                                 dynamicSizes(b, loc, type, sources));
}

AffineMap broadcastMap(MLIRContext *context, RankedTensorType operandType,
                       RankedTensorType resultType) {
  int64_t rank = resultType.getRank();
  int64_t operandRank = operandType.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < operandRank; ++d) {
    int64_t resultDim = d + rank - operandRank;
    if (operandType.getDimSize(d) == 1 && resultType.getDimSize(resultDim) != 1)
      exprs.push_back(getAffineConstantExpr(0, context));
    else
      exprs.push_back(getAffineDimExpr(resultDim, context));
  }
  return AffineMap::get(rank, 0, exprs, context);
}

Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                  ValueRange inputs, ScalarBody body) {
  MLIRContext *context = b.getContext();
  Value init = emptyLike(b, loc, resultType, inputs);
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(broadcastMap(
        context, cast<RankedTensorType>(input.getType()), resultType));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value reduceRows(OpBuilder &b, Location loc, Value input, bool isMax) {
  MLIRContext *context = b.getContext();
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rank = inputType.getRank();
  SmallVector<int64_t> shape(inputType.getShape());
  shape.back() = 1;
  auto resultType = RankedTensorType::get(shape, inputType.getElementType());
  auto element = cast<FloatType>(inputType.getElementType());
  Value init = emptyLike(b, loc, resultType, input);
  double identity = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  Value identityValue =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(element, identity));
  Value filled =
      linalg::FillOp::create(b, loc, identityValue, init).getResult(0);

  SmallVector<AffineExpr> outExprs;
  for (int64_t d = 0; d + 1 < rank; ++d)
    outExprs.push_back(getAffineDimExpr(d, context));
  outExprs.push_back(getAffineConstantExpr(0, context));
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank),
                              AffineMap::get(rank, 0, outExprs, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators.back() = utils::IteratorType::reduction;
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{input}, ValueRange{filled},
      maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value r = isMax ? Value(arith::MaximumFOp::create(nested, nestedLoc,
                                                          args[0], args[1]))
                        : Value(arith::AddFOp::create(nested, nestedLoc,
                                                      args[0], args[1]));
        linalg::YieldOp::create(nested, nestedLoc, r);
      });
  return generic.getResult(0);
}

} // namespace lowering
} // namespace rnn
