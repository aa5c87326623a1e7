//===- RNNDialect.cpp - The rnn dialect -----------------------------------===//

#include "rnn/Dialect/RNN/IR/RNNDialect.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace rnn;

#include "rnn/Dialect/RNN/IR/RNNOpsDialect.cpp.inc"

void RNNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "rnn/Dialect/RNN/IR/RNNOps.cpp.inc"
      >();
}

Operation *RNNDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  // Folders in this dialect only produce scalars that stand for splats.
  auto floatValue = dyn_cast<FloatAttr>(value);
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!floatValue || !tensorType || !tensorType.hasStaticShape() ||
      !isa<FloatType>(tensorType.getElementType()))
    return nullptr;
  return ConstantOp::create(
      builder, loc, tensorType,
      builder.getF64FloatAttr(floatValue.getValueAsDouble()));
}
