//===- PointwiseOps.cpp - Pointwise math, constants and casts -------------===//

#include "rnn/Dialect/RNN/IR/Broadcast.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace rnn;

//===----------------------------------------------------------------------===//
// Result types of binary ops: the broadcasting rule
//===----------------------------------------------------------------------===//

static LogicalResult inferBinaryResult(StringRef opName,
                                       std::optional<Location> location,
                                       ValueRange operands,
                                       SmallVectorImpl<Type> &results) {
  if (operands.size() != 2)
    return emitOptionalError(location, "'", opName,
                             "' op expects two operands");
  auto lhs = dyn_cast<RankedTensorType>(operands[0].getType());
  auto rhs = dyn_cast<RankedTensorType>(operands[1].getType());
  if (!lhs || !rhs)
    return emitOptionalError(location, "'", opName,
                             "' op expects ranked tensor operands");
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(location, "'", opName,
                             "' op operand element types differ: lhs ", lhs,
                             ", rhs ", rhs, " (use rnn.cast)");
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return emitOptionalError(
        location, "'", opName, "' op operands ", lhs, " and ", rhs,
        " do not broadcast: aligned at the trailing dimension, each pair of "
        "sizes must be equal or one of them 1");
  results.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

#define RNN_DEFINE_BINARY_INFERENCE(OP)                                        \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> location, ValueRange operands,    \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &inferredReturnTypes) {                            \
    return inferBinaryResult(getOperationName(), location, operands,           \
                             inferredReturnTypes);                             \
  }
RNN_DEFINE_BINARY_INFERENCE(AddOp)
RNN_DEFINE_BINARY_INFERENCE(SubOp)
RNN_DEFINE_BINARY_INFERENCE(MulOp)
RNN_DEFINE_BINARY_INFERENCE(DivOp)
RNN_DEFINE_BINARY_INFERENCE(MaxOp)
RNN_DEFINE_BINARY_INFERENCE(MinOp)
#undef RNN_DEFINE_BINARY_INFERENCE

//===----------------------------------------------------------------------===//
// SelectOp
//===----------------------------------------------------------------------===//

LogicalResult
SelectOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                           ValueRange operands, DictionaryAttr,
                           OpaqueProperties, RegionRange,
                           SmallVectorImpl<Type> &inferredReturnTypes) {
  static const char *const names[] = {"lhs", "rhs", "on_true", "on_false"};
  if (operands.size() != 4)
    return emitOptionalError(location,
                             "'rnn.select' op expects four operands, got ",
                             operands.size());
  SmallVector<RankedTensorType> types;
  for (Value operand : operands) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type)
      return emitOptionalError(
          location, "'rnn.select' op expects ranked tensor operands");
    types.push_back(type);
  }
  SmallVector<int64_t> shape(types[0].getShape());
  for (unsigned i = 1; i < 4; ++i) {
    if (types[i].getElementType() != types[0].getElementType())
      return emitOptionalError(location, "'rnn.select' op operand ", names[i],
                               " has type ", types[i],
                               " but lhs has element type ",
                               types[0].getElementType(), " (use rnn.cast)");
    std::optional<SmallVector<int64_t>> joined =
        broadcastShapes(shape, types[i].getShape());
    if (!joined)
      return emitOptionalError(
          location, "'rnn.select' op operands ", types[0], ", ", types[1], ", ",
          types[2], " and ", types[3], " do not broadcast (at operand ",
          names[i],
          "): aligned at the trailing dimension, each set of sizes must be "
          "equal or 1");
    shape = *joined;
  }
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, types[0].getElementType()));
  return success();
}

/// Whether `lhs predicate rhs` holds for two numbers (IEEE: only `ne` holds
/// when either is NaN).
static bool compare(ComparisonPredicate predicate, double lhs, double rhs) {
  switch (predicate) {
  case ComparisonPredicate::eq:
    return lhs == rhs;
  case ComparisonPredicate::ne:
    return lhs != rhs;
  case ComparisonPredicate::lt:
    return lhs < rhs;
  case ComparisonPredicate::le:
    return lhs <= rhs;
  case ComparisonPredicate::gt:
    return lhs > rhs;
  case ComparisonPredicate::ge:
    return lhs >= rhs;
  }
  llvm_unreachable("a comparison predicate");
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  // The chosen operand stands for the result only where broadcasting did not
  // change its type.
  auto chosen = [&](Value v) -> OpFoldResult {
    return v.getType() == getType() ? OpFoldResult(v) : OpFoldResult();
  };
  // Both choices the same value.
  if (getOnTrue() == getOnFalse())
    return chosen(getOnTrue());
  // x < x and x > x are false for every x, NaN included.
  ComparisonPredicate predicate = getPredicate();
  if (getLhs() == getRhs() && (predicate == ComparisonPredicate::lt ||
                               predicate == ComparisonPredicate::gt))
    return chosen(getOnFalse());
  // Two splat constants compared.
  auto lhs = dyn_cast_or_null<FloatAttr>(adaptor.getLhs());
  auto rhs = dyn_cast_or_null<FloatAttr>(adaptor.getRhs());
  if (lhs && rhs)
    return chosen(
        compare(predicate, lhs.getValueAsDouble(), rhs.getValueAsDouble())
            ? getOnTrue()
            : getOnFalse());
  return {};
}

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

/// Whether `value` is a splat constant equal to `number`.
static bool isSplatOf(Value value, double number) {
  FloatAttr attr;
  return matchPattern(value, m_Constant(&attr)) &&
         attr.getValueAsDouble() == number;
}

/// `x op identity` folds to `x` when broadcasting did not change x's type
/// (otherwise the op still materialises the broadcast).
static OpFoldResult foldIdentityOperand(Value x, Value identityCandidate,
                                        double identity, Type resultType) {
  if (x.getType() == resultType && isSplatOf(identityCandidate, identity))
    return x;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor) {
  if (OpFoldResult r = foldIdentityOperand(getLhs(), getRhs(), 0.0, getType()))
    return r;
  return foldIdentityOperand(getRhs(), getLhs(), 0.0, getType());
}

OpFoldResult SubOp::fold(FoldAdaptor) {
  return foldIdentityOperand(getLhs(), getRhs(), 0.0, getType());
}

OpFoldResult MulOp::fold(FoldAdaptor) {
  if (OpFoldResult r = foldIdentityOperand(getLhs(), getRhs(), 1.0, getType()))
    return r;
  return foldIdentityOperand(getRhs(), getLhs(), 1.0, getType());
}

OpFoldResult DivOp::fold(FoldAdaptor) {
  return foldIdentityOperand(getLhs(), getRhs(), 1.0, getType());
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// ConstantOp and CastOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult ConstantOp::verify() {
  if (!getType().hasStaticShape())
    return emitOpError() << "result type " << getType()
                         << " must have a static shape";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult CastOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (input.getShape() != getType().getShape())
    return emitOpError() << "changes the shape from " << input << " to "
                         << getType() << "; a cast only converts elements";
  return success();
}
