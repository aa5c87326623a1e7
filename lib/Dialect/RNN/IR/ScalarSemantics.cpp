//===- ScalarSemantics.cpp - Elementwise rnn ops as scalar code -----------===//

#include "rnn/Dialect/RNN/IR/ScalarSemantics.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace rnn {

bool isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, NegOp, SigmoidOp, TanhOp,
             ReluOp, ExpOp, LogOp, SqrtOp, RsqrtOp, CastOp, HeavisideOp,
             ZerosLikeOp, SelectOp>(op);
}

Value buildScalarElementwise(OpBuilder &b, Location loc, Operation *op,
                             ValueRange operands, Type resultElement) {
  Value x = operands[0];
  Value y = operands.size() > 1 ? operands[1] : Value();
  auto constant = [&](double value) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     b.getFloatAttr(resultElement, value));
  };
  if (isa<AddOp>(op))
    return arith::AddFOp::create(b, loc, x, y);
  if (isa<SubOp>(op))
    return arith::SubFOp::create(b, loc, x, y);
  if (isa<MulOp>(op))
    return arith::MulFOp::create(b, loc, x, y);
  if (isa<DivOp>(op))
    return arith::DivFOp::create(b, loc, x, y);
  // maximumf/minimumf propagate NaN, as torch.maximum/minimum do.
  if (isa<MaxOp>(op))
    return arith::MaximumFOp::create(b, loc, x, y);
  if (isa<MinOp>(op))
    return arith::MinimumFOp::create(b, loc, x, y);
  if (isa<NegOp>(op))
    return arith::NegFOp::create(b, loc, x);
  if (isa<SigmoidOp>(op)) {
    // 1 / (1 + exp(-x)): exp overflows to +inf for very negative x and the
    // quotient is then exactly 0, so no special case is needed.
    Value one = constant(1.0);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, one,
                                 arith::AddFOp::create(b, loc, one, e));
  }
  if (isa<TanhOp>(op))
    return math::TanhOp::create(b, loc, x);
  if (isa<ReluOp>(op))
    return arith::MaximumFOp::create(b, loc, x, constant(0.0));
  if (isa<ExpOp>(op))
    return math::ExpOp::create(b, loc, x);
  if (isa<LogOp>(op))
    return math::LogOp::create(b, loc, x);
  if (isa<SqrtOp>(op))
    return math::SqrtOp::create(b, loc, x);
  if (isa<RsqrtOp>(op))
    return math::RsqrtOp::create(b, loc, x);
  if (auto step = dyn_cast<HeavisideOp>(op)) {
    // Ordered comparisons: a NaN is neither above nor at zero, so it gives 0.
    Value zero = constant(0.0);
    Value above =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
    Value at =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, zero);
    Value atValue = constant(step.getAtZero().convertToDouble());
    Value belowOrAt = arith::SelectOp::create(b, loc, at, atValue, zero);
    return arith::SelectOp::create(b, loc, above, constant(1.0), belowOrAt);
  }
  if (isa<ZerosLikeOp>(op))
    return constant(0.0);
  if (auto select = dyn_cast<SelectOp>(op)) {
    // Ordered comparisons but `ne`, as C, numpy and torch compare floats.
    arith::CmpFPredicate predicate = arith::CmpFPredicate::OEQ;
    switch (select.getPredicate()) {
    case ComparisonPredicate::eq:
      predicate = arith::CmpFPredicate::OEQ;
      break;
    case ComparisonPredicate::ne:
      predicate = arith::CmpFPredicate::UNE;
      break;
    case ComparisonPredicate::lt:
      predicate = arith::CmpFPredicate::OLT;
      break;
    case ComparisonPredicate::le:
      predicate = arith::CmpFPredicate::OLE;
      break;
    case ComparisonPredicate::gt:
      predicate = arith::CmpFPredicate::OGT;
      break;
    case ComparisonPredicate::ge:
      predicate = arith::CmpFPredicate::OGE;
      break;
    }
    Value holds = arith::CmpFOp::create(b, loc, predicate, x, y);
    return arith::SelectOp::create(b, loc, holds, operands[2], operands[3]);
  }
  if (isa<CastOp>(op)) {
    auto from = cast<FloatType>(x.getType());
    auto to = cast<FloatType>(resultElement);
    if (from == to)
      return x;
    if (from.getWidth() < to.getWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    return arith::TruncFOp::create(b, loc, to, x);
  }
  return {};
}

} // namespace rnn
