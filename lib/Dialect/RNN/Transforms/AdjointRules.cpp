//===- AdjointRules.cpp - Reverse-mode rules for the dialect's ops --------===//

#include "AdjointRules.h"

using namespace mlir;

namespace rnn {

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

Value AdjointBuilder::add(Value x, Value y) {
  return AddOp::create(b, loc, x, y);
}
Value AdjointBuilder::sub(Value x, Value y) {
  return SubOp::create(b, loc, x, y);
}
Value AdjointBuilder::mul(Value x, Value y) {
  return MulOp::create(b, loc, x, y);
}
Value AdjointBuilder::div(Value x, Value y) {
  return DivOp::create(b, loc, x, y);
}
Value AdjointBuilder::neg(Value x) {
  return NegOp::create(b, loc, x.getType(), x);
}
Value AdjointBuilder::scalar(double value, Type element) {
  return ConstantOp::create(b, loc, RankedTensorType::get({}, element),
                            b.getF64FloatAttr(value));
}
Value AdjointBuilder::zerosLike(Value x) {
  return ZerosLikeOp::create(b, loc, x.getType(), x);
}

Value AdjointBuilder::castTo(Value x, Type element) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getElementType() == element)
    return x;
  // One cast per value and type, so that the values a step emits are not
  // emitted twice.
  Value &cached = casts[{x, element}];
  if (!cached)
    cached = CastOp::create(b, loc, type.clone(element), x);
  return cached;
}

Value AdjointBuilder::sumTo(Value full, Type type) {
  if (full.getType() == type)
    return full;
  return SumToOp::create(b, loc, type, full);
}

/// The result element of a product of `element` operands: f32 for the
/// half-precision types, as rnn.matmul accumulates them.
static Type productElement(Type element) {
  if (element.isF16() || element.isBF16())
    return Float32Type::get(element.getContext());
  return element;
}

Value AdjointBuilder::outerSum(Value lhs, Value rhs, bool allowTf32,
                               Type element) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  Type operandElement = lhsType.getElementType();
  auto type = RankedTensorType::get(
      {lhsType.getShape().back(), rhsType.getShape().back()},
      productElement(operandElement));
  Value product = OuterSumOp::create(b, loc, type, lhs, rhs,
                                     allowTf32 && operandElement.isF32());
  return castTo(product, element);
}

Value AdjointBuilder::headwiseOuterSum(Value gateMajor, Value headMajor,
                                       int64_t gates, bool allowTf32,
                                       RankedTensorType weightType) {
  Type operandElement =
      cast<RankedTensorType>(gateMajor.getType()).getElementType();
  auto type = RankedTensorType::get(weightType.getShape(),
                                    productElement(operandElement));
  Value product =
      HeadwiseOuterSumOp::create(b, loc, type, gateMajor, headMajor, gates,
                                 allowTf32 && operandElement.isF32());
  return castTo(product, weightType.getElementType());
}

Value AdjointBuilder::matmulFlipped(Value g, Value weight, bool weightInOut,
                                    bool allowTf32, Type element) {
  auto gType = cast<RankedTensorType>(g.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  // y = x · Wᵀ (W [N, K]) gives dx = g · W, the [K, N]-style product; and
  // y = x · W (W [K, N]) gives dx = g · Wᵀ, the default layout.
  int64_t k = weightType.getDimSize(weightInOut ? 0 : 1);
  SmallVector<int64_t> shape(gType.getShape().drop_back());
  shape.push_back(k);
  Type operandElement = weightType.getElementType();
  auto type = RankedTensorType::get(shape, productElement(operandElement));
  auto product = MatmulOp::create(
      b, loc, type, castTo(g, operandElement), weight, /*acc=*/Value(),
      /*weight_in_out=*/!weightInOut, allowTf32 && operandElement.isF32());
  return castTo(product, element);
}

void AdjointBuilder::accumulate(Value value, Value grad) {
  assert(value.getType() == grad.getType() &&
         "a gradient has its value's type");
  auto [it, inserted] = grads.try_emplace(value, grad);
  if (!inserted)
    it->second = add(it->second, grad);
}

LogicalResult AdjointBuilder::broadcast(Value operand, Value full,
                                        Operation *op) {
  FailureOr<bool> taken = sink.takeBroadcast(operand, full, op);
  if (failed(taken))
    return failure();
  if (!*taken)
    accumulate(operand, sumTo(full, operand.getType()));
  return success();
}

static Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

//===----------------------------------------------------------------------===//
// The rules
//===----------------------------------------------------------------------===//

LogicalResult AdjointBuilder::applyMatmul(MatmulOp matmul, Value g) {
  Value lhs = matmul.getLhs(), weight = matmul.getRhs();
  bool inOut = matmul.getWeightInOut(), tf32 = matmul.getAllowTf32();
  if (Value acc = matmul.getAcc())
    accumulate(acc, g);
  Value gw = castTo(g, elementOf(weight));
  if (!sink.takeLhsGradient(matmul, gw)) {
    // Where lhs is the 16-bit copy of a value of the product's type (a state
    // h multiplied in bf16: rnn.cast h), the product is h's gradient
    // contribution as it is: it goes to h directly, in f32, not rounded to
    // the copy's type and back by the cast's rule.
    Value target = lhs;
    if (auto cast = lhs.getDefiningOp<CastOp>();
        cast && elementOf(cast.getInput()) == productElement(elementOf(weight)))
      target = cast.getInput();
    Value product =
        matmulFlipped(gw, p(weight), inOut, tf32, elementOf(target));
    // Where the target already has a gradient of the product's type (the
    // GRU's dh = z·dh' + dgates·U), the product accumulates onto it in the
    // GEMM (`acc`) instead of in a pointwise kernel of its own after it.
    Value existing = gradient(target);
    auto matmulOp = product.getDefiningOp<MatmulOp>();
    if (existing && matmulOp && !matmulOp.getAcc() &&
        existing.getType() == product.getType()) {
      matmulOp.getAccMutable().assign(existing);
      grads[target] = product;
    } else {
      accumulate(target, product);
    }
  }
  // dW = gᵀ · x for W [N, K]; xᵀ · g for W [K, N].
  Value a = inOut ? p(lhs) : gw, c = inOut ? gw : p(lhs);
  FailureOr<bool> taken = sink.takeWeightGradient(matmul, a, c);
  if (failed(taken))
    return failure();
  if (!*taken)
    accumulate(weight, outerSum(a, c, tf32, elementOf(weight)));
  return success();
}

/// y = x·Mᵀ for the block matrix M of the heads gives dx = g·M, the product
/// with the map transposed, and dR the head-wise outer sums of g and x (for
/// the transposed product, of x and g: the gate-major side always first).
LogicalResult AdjointBuilder::applyHeadwise(HeadwiseMatmulOp product, Value g) {
  Value lhs = product.getLhs(), weight = product.getRhs();
  bool transposed = product.getTransposed(), tf32 = product.getAllowTf32();
  int64_t gates = product.getGates();
  Type weightElement = elementOf(weight);
  Value gw = castTo(g, weightElement);
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto type =
      RankedTensorType::get(lhsType.getShape(), productElement(weightElement));
  Value dl = HeadwiseMatmulOp::create(b, loc, type, gw, p(weight), gates,
                                      !transposed, tf32);
  accumulate(lhs, castTo(dl, elementOf(lhs)));
  Value x = castTo(p(lhs), weightElement);
  Value gateMajor = transposed ? x : gw, headMajor = transposed ? gw : x;
  FailureOr<bool> taken =
      sink.takeHeadwiseWeightGradient(product, gateMajor, headMajor);
  if (failed(taken))
    return failure();
  if (!*taken)
    accumulate(weight,
               headwiseOuterSum(gateMajor, headMajor, gates, tf32,
                                cast<RankedTensorType>(weight.getType())));
  return success();
}

LogicalResult AdjointBuilder::apply(Operation *op) {
  loc = op->getLoc();
  SmallVector<Value> g;
  bool any = false;
  for (Value result : op->getResults()) {
    g.push_back(gradient(result));
    any |= bool(g.back());
  }
  if (!any)
    return success();
  if (isa<ConstantOp, HeavisideOp, ZerosLikeOp>(op))
    return success(); // Constant, or zero derivative everywhere it has one.

  Value x = op->getNumOperands() > 0 ? op->getOperand(0) : Value();
  Value y = op->getNumOperands() > 1 ? op->getOperand(1) : Value();
  Value r = op->getNumResults() == 1 ? p(op->getResult(0)) : Value();
  Value g0 = g.front();
  auto one = [&](Value like) { return scalar(1.0, elementOf(like)); };

  if (isa<AddOp>(op)) {
    if (failed(broadcast(x, g0, op)))
      return failure();
    return broadcast(y, g0, op);
  }
  if (isa<SubOp>(op)) {
    if (failed(broadcast(x, g0, op)))
      return failure();
    return broadcast(y, neg(g0), op);
  }
  if (isa<MulOp>(op)) {
    if (failed(broadcast(x, mul(g0, p(y)), op)))
      return failure();
    return broadcast(y, mul(g0, p(x)), op);
  }
  if (isa<DivOp>(op)) {
    Value gy = div(g0, p(y));
    if (failed(broadcast(x, gy, op)))
      return failure();
    return broadcast(y, neg(mul(gy, r)), op);
  }
  if (isa<MaxOp, MinOp>(op)) {
    // The operand that wins gets the gradient; a tie splits it evenly.
    Value xWins = sub(p(x), p(y)), yWins = sub(p(y), p(x));
    if (isa<MinOp>(op))
      std::swap(xWins, yWins);
    auto step = [&](Value v) {
      return HeavisideOp::create(b, loc, v.getType(), v,
                                 b.getF64FloatAttr(0.5));
    };
    if (failed(broadcast(x, mul(g0, step(xWins)), op)))
      return failure();
    return broadcast(y, mul(g0, step(yWins)), op);
  }
  if (auto select = dyn_cast<SelectOp>(op)) {
    // The chosen operand gets the gradient, the other none; the compared
    // operands get none (the comparison is flat almost everywhere).
    Value lhs = p(select.getLhs()), rhs = p(select.getRhs());
    Value zero = scalar(0.0, elementOf(g0));
    auto choose = [&](Value onTrue, Value onFalse) -> Value {
      return SelectOp::create(b, loc, select.getPredicateAttr(), lhs, rhs,
                              onTrue, onFalse);
    };
    if (failed(broadcast(select.getOnTrue(), choose(g0, zero), op)))
      return failure();
    return broadcast(select.getOnFalse(), choose(zero, g0), op);
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> permutation = transpose.getPermutation();
    SmallVector<int64_t> inverse(permutation.size());
    for (auto [i, d] : llvm::enumerate(permutation))
      inverse[d] = i;
    accumulate(x, TransposeOp::create(b, loc, x.getType(), g0, inverse));
    return success();
  }
  if (isa<ReshapeOp>(op)) {
    accumulate(x, ReshapeOp::create(b, loc, x.getType(), g0));
    return success();
  }
  if (isa<NegOp>(op)) {
    accumulate(x, neg(g0));
    return success();
  }
  if (isa<SigmoidOp>(op)) {
    accumulate(x, mul(g0, mul(r, sub(one(r), r))));
    return success();
  }
  if (isa<TanhOp>(op)) {
    accumulate(x, mul(g0, sub(one(r), mul(r, r))));
    return success();
  }
  if (isa<ReluOp>(op)) {
    // PyTorch's threshold_backward: no gradient where the input is <= 0.
    Value px = p(x);
    accumulate(x, mul(g0, HeavisideOp::create(b, loc, px.getType(), px,
                                              b.getF64FloatAttr(0.0))));
    return success();
  }
  if (isa<ExpOp>(op)) {
    accumulate(x, mul(g0, r));
    return success();
  }
  if (isa<LogOp>(op)) {
    accumulate(x, div(g0, p(x)));
    return success();
  }
  if (isa<SqrtOp>(op)) {
    accumulate(x, div(mul(g0, scalar(0.5, elementOf(r))), r));
    return success();
  }
  if (isa<RsqrtOp>(op)) {
    // d(x^-1/2) = -1/2 x^-3/2 = -1/2 r³.
    Value cube = mul(r, mul(r, r));
    accumulate(x, mul(g0, mul(scalar(-0.5, elementOf(r)), cube)));
    return success();
  }
  if (isa<CastOp>(op)) {
    // A gradient that was itself rounded from x's type (the f32 product of a
    // bf16 weight's gradient) is taken before the rounding.
    auto rounded = g0.getDefiningOp<CastOp>();
    if (rounded && rounded.getInput().getType() == x.getType())
      accumulate(x, rounded.getInput());
    else
      accumulate(x, castTo(g0, elementOf(x)));
    return success();
  }
  if (auto split = dyn_cast<SplitOp>(op)) {
    SmallVector<Value> pieces;
    for (auto [result, grad] : llvm::zip(split.getResults(), g))
      pieces.push_back(grad ? grad : zerosLike(p(result)));
    auto concat =
        ConcatOp::create(b, loc, x.getType(), pieces, split.getAxisAttr());
    accumulate(x, concat);
    return success();
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    auto split = SplitOp::create(b, loc, concat.getInputs().getTypes(), g0,
                                 concat.getAxisAttr());
    for (auto [input, piece] :
         llvm::zip(concat.getInputs(), split.getResults()))
      accumulate(input, piece);
    return success();
  }
  if (isa<ReduceSumOp, ReduceMeanOp>(op)) {
    Value spread = g0;
    if (isa<ReduceMeanOp>(op)) {
      auto type = cast<RankedTensorType>(x.getType());
      spread = div(g0, scalar(double(type.getShape().back()), elementOf(x)));
    }
    accumulate(x, add(zerosLike(p(x)), spread));
    return success();
  }
  if (isa<ReduceMaxOp>(op)) {
    // Like torch.amax: the gradient is shared evenly by the tied maxima.
    Value px = p(x);
    Value diff = sub(px, r);
    Value isMax = HeavisideOp::create(b, loc, diff.getType(), diff,
                                      b.getF64FloatAttr(1.0));
    Value count = ReduceSumOp::create(b, loc, isMax);
    accumulate(x, mul(isMax, div(g0, count)));
    return success();
  }
  if (auto norm = dyn_cast<LayerNormOp>(op)) {
    // y = (x - μ)·s, s = (σ² + ε)^-1/2:  dx = s·(g - mean(g) - y·mean(g·y)).
    Value px = p(x);
    Value centred = sub(px, ReduceMeanOp::create(b, loc, px));
    Value variance = ReduceMeanOp::create(b, loc, mul(centred, centred));
    Value epsilon = scalar(norm.getEpsilon().convertToDouble(), elementOf(px));
    Value scale =
        RsqrtOp::create(b, loc, variance.getType(), add(variance, epsilon));
    Value meanG = ReduceMeanOp::create(b, loc, g0);
    Value meanGY = ReduceMeanOp::create(b, loc, mul(g0, r));
    accumulate(x, mul(scale, sub(sub(g0, meanG), mul(r, meanGY))));
    return success();
  }
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return applyMatmul(matmul, g0);
  if (auto headwise = dyn_cast<HeadwiseMatmulOp>(op))
    return applyHeadwise(headwise, g0);
  if (auto outer = dyn_cast<OuterSumOp>(op)) {
    // result = aᵀ·c (a [.., N], c [.., K]): da = c · gᵀ, dc = a · g.
    Value a = outer.getLhs(), c = outer.getRhs();
    Value gc = castTo(g0, elementOf(a));
    bool tf32 = outer.getAllowTf32();
    auto product = [&](Value rows, bool inOut, Value like) {
      auto rowsType = cast<RankedTensorType>(rows.getType());
      SmallVector<int64_t> shape(rowsType.getShape().drop_back());
      shape.push_back(cast<RankedTensorType>(like.getType()).getShape().back());
      auto type = RankedTensorType::get(shape, productElement(elementOf(a)));
      Value v = MatmulOp::create(b, loc, type, rows, gc, Value(), inOut, tf32);
      return castTo(v, elementOf(like));
    };
    accumulate(a, product(p(c), /*inOut=*/false, a));
    accumulate(c, product(p(a), /*inOut=*/true, c));
    return success();
  }
  if (isa<SumToOp>(op)) {
    // A 16-bit input summed in f32 gets its gradient in its own type.
    accumulate(x, add(zerosLike(p(x)), castTo(g0, elementOf(x))));
    return success();
  }
  if (isa<PointwiseOp>(op))
    return op->emitOpError()
           << "has no adjoint rule: differentiate a cell before "
              "rnn-fuse-pointwise (the adjoint is fused by the same pass)";
  return op->emitOpError() << "has no adjoint rule";
}

} // namespace rnn
