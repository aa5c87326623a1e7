//===- RowReduction.cpp - Recognising row reductions on buffers -----------===//

#include "RowReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

using namespace mlir;

namespace rnn {

TypedAttr neutralElement(Operation *combiner, FloatType type) {
  double value;
  if (isa<arith::AddFOp>(combiner))
    value = 0.0;
  else if (isa<arith::MulFOp>(combiner))
    value = 1.0;
  else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
    value = -std::numeric_limits<double>::infinity();
  else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
    value = std::numeric_limits<double>::infinity();
  else
    return {};
  return FloatAttr::get(type, value);
}

Operation *matchRowReduction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1)
    return nullptr;
  int64_t rank = op.getNumLoops();
  if (rank < 2 || op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return nullptr;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!maps[0].isIdentity())
    return nullptr;
  MLIRContext *context = op.getContext();
  SmallVector<AffineExpr> outExprs;
  for (int64_t d = 0; d + 1 < rank; ++d)
    outExprs.push_back(getAffineDimExpr(d, context));
  outExprs.push_back(getAffineConstantExpr(0, context));
  if (maps[1] != AffineMap::get(rank, 0, outExprs, context))
    return nullptr;
  Block *body = op.getBlock();
  if (!llvm::hasSingleElement(body->without_terminator()))
    return nullptr;
  Operation *combiner = &body->front();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (yield.getValues().size() != 1 ||
      yield.getValues()[0] != combiner->getResult(0) ||
      combiner->getNumOperands() != 2 ||
      !llvm::is_contained(combiner->getOperands(), body->getArgument(0)) ||
      !llvm::is_contained(combiner->getOperands(), body->getArgument(1)))
    return nullptr;
  auto type = dyn_cast<FloatType>(body->getArgument(0).getType());
  if (!type || !neutralElement(combiner, type))
    return nullptr;
  return combiner;
}

Value combine(OpBuilder &b, Operation *combiner, Value lhs, Value rhs) {
  Block *body = combiner->getBlock();
  IRMapping mapping;
  mapping.map(body->getArgument(0), lhs);
  mapping.map(body->getArgument(1), rhs);
  return b.clone(*combiner, mapping)->getResult(0);
}

Value combineAcrossWarp(OpBuilder &b, Location loc, Operation *combiner,
                        Value partial) {
  for (int32_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, loc, partial, offset, kWarpSize,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = combine(b, combiner, other, partial);
  }
  return partial;
}

} // namespace rnn
