//===- HeadwiseLowering.cpp - Head-wise products to linalg ----------------===//
//
// rnn.headwise_matmul and rnn.headwise_outer_sum become one linalg.generic
// each, on views that give heads and gates dimensions of their own
// ([..., NH·K] as [..., NH, K], the gate-major [..., G·NH·N] as
// [..., G, NH, N], the weight [NH, G·N, K] as [NH, G, N, K]), marked with its
// form (rnn.headwise_gemm). convert-matmul-to-library-gemm{batched-function}
// makes each one strided-batched GEMM call per gate with the heads as the
// batch (OpenBLAS on the CPU, cuBLAS on the GPU); the persistent kernels'
// matcher reads the generic before that. Unconverted, it lowers to loops:
// correct by construction, if not fast.
//
// One head of rnn.headwise_matmul is the dense product: one marked
// contraction (a GEMM), as for rnn.matmul. rnn.outer_sum is the one-head,
// one-gate outer sum: one GEMM reading its left operand transposed where it
// lies.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace rnn {
namespace lowering {

/// `value` with its last dimension split into `sizes` (whose product it is).
static Value splitLastDim(OpBuilder &b, Location loc, Value value,
                          ArrayRef<int64_t> sizes) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape().drop_back());
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    groups.push_back({d});
  ReassociationIndices last;
  for (int64_t size : sizes) {
    last.push_back(shape.size());
    shape.push_back(size);
  }
  groups.push_back(last);
  auto expanded = RankedTensorType::get(shape, type.getElementType());
  return tensor::ExpandShapeOp::create(b, loc, expanded, value, groups);
}

/// `value` with its last `count` dimensions merged into one of type `type`.
static Value mergeLastDims(OpBuilder &b, Location loc, Value value,
                           int64_t count, RankedTensorType type) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < rank - count; ++d)
    groups.push_back({d});
  ReassociationIndices last;
  for (int64_t d = rank - count; d < rank; ++d)
    last.push_back(d);
  groups.push_back(last);
  return tensor::CollapseShapeOp::create(b, loc, type, value, groups);
}

/// `Σ lhs · rhs` into a zero-filled `outType` over `numDims` loop
/// dimensions, the first `numParallel` of them parallel, the rest reduced;
/// half-precision operands are extended to the result's type. The dynamic
/// sizes of `outType` are leading ones, those of `rows`. The generic is
/// marked with its head-wise `form` (and TF32 where allowed), which
/// convert-matmul-to-library-gemm reads.
static Value contract(OpBuilder &b, Location loc, Value lhs, Value rhs,
                      RankedTensorType outType, Value rows, unsigned numDims,
                      unsigned numParallel, ArrayRef<AffineExpr> lhsExprs,
                      ArrayRef<AffineExpr> rhsExprs,
                      ArrayRef<AffineExpr> outExprs, HeadwiseGemmForm form,
                      bool allowTf32) {
  MLIRContext *context = b.getContext();
  Type element = outType.getElementType();
  SmallVector<Value> dynamic;
  for (int64_t d = 0; d < outType.getRank(); ++d)
    if (outType.isDynamicDim(d))
      dynamic.push_back(tensor::DimOp::create(b, loc, rows, d));
  Value init =
      tensor::EmptyOp::create(b, loc, outType.getShape(), element, dynamic);
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  Value filled = linalg::FillOp::create(b, loc, zero, init).getResult(0);
  SmallVector<AffineMap> maps{AffineMap::get(numDims, 0, lhsExprs, context),
                              AffineMap::get(numDims, 0, rhsExprs, context),
                              AffineMap::get(numDims, 0, outExprs, context)};
  SmallVector<utils::IteratorType> iterators(numParallel,
                                             utils::IteratorType::parallel);
  iterators.append(numDims - numParallel, utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{lhs, rhs}, ValueRange{filled},
      maps, iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        buildMultiplyAccumulate(nb, l, args, element);
      });
  generic->setAttr(kHeadwiseGemmAttr, b.getI32IntegerAttr(form));
  if (allowTf32)
    generic->setAttr(kGemmAllowTf32Attr, b.getUnitAttr());
  return generic.getResult(0);
}

static Value headwiseMatmulAsGeneric(OpBuilder &b, HeadwiseMatmulOp op) {
  Location loc = op.getLoc();
  MLIRContext *context = b.getContext();
  int64_t heads = op.getNumHeads(), gates = op.getGates();
  int64_t n = op.getHeadOutputSize(), k = op.getHeadInputSize();
  RankedTensorType resultType = op.getType();
  int64_t leading = resultType.getRank() - 1;

  auto weightType = cast<RankedTensorType>(op.getRhs().getType());
  Value weight = tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({heads, gates, n, k}, weightType.getElementType()),
      op.getRhs(), SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}});

  // Loop dimensions: the leading ones, then h, g, j, k in an order that puts
  // the parallel ones first.
  SmallVector<AffineExpr> rows;
  for (int64_t d = 0; d < leading; ++d)
    rows.push_back(getAffineDimExpr(d, context));
  auto dim = [&](int64_t i) { return getAffineDimExpr(leading + i, context); };
  SmallVector<AffineExpr> lhsExprs(rows), outExprs(rows);
  SmallVector<int64_t> outShape(resultType.getShape().drop_back());
  Value lhs;
  AffineExpr h, g, j, kk;
  if (!op.getTransposed()) {
    // Parallel h, g, j; reduced k.
    h = dim(0), g = dim(1), j = dim(2), kk = dim(3);
    lhs = splitLastDim(b, loc, op.getLhs(), {heads, k});
    lhsExprs.append({h, kk});
    outExprs.append({g, h, j});
    outShape.append({gates, heads, n});
  } else {
    // Parallel h, k; reduced g, j.
    h = dim(0), kk = dim(1), g = dim(2), j = dim(3);
    lhs = splitLastDim(b, loc, op.getLhs(), {gates, heads, n});
    lhsExprs.append({g, h, j});
    outExprs.append({h, kk});
    outShape.append({heads, k});
  }
  auto outType = RankedTensorType::get(outShape, resultType.getElementType());
  unsigned numParallel = leading + (op.getTransposed() ? 2 : 3);
  Value product =
      contract(b, loc, lhs, weight, outType, op.getLhs(), leading + 4,
               numParallel, lhsExprs, {h, g, j, kk}, outExprs,
               op.getTransposed() ? kHeadwiseTransposed : kHeadwiseForward,
               op.getAllowTf32());
  return mergeLastDims(b, loc, product, op.getTransposed() ? 2 : 3, resultType);
}

Value buildHeadwiseOuterSum(OpBuilder &b, Location loc, Value lhs, Value rhs,
                            int64_t heads, int64_t gates, Type element,
                            bool allowTf32) {
  MLIRContext *context = b.getContext();
  // Rows: every leading dimension, reduced.
  auto rowsOf = [&](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() == 2)
      return v;
    ReassociationIndices all;
    for (int64_t d = 0; d + 1 < type.getRank(); ++d)
      all.push_back(d);
    return Value(tensor::CollapseShapeOp::create(
        b, loc, v,
        SmallVector<ReassociationIndices>{all, {type.getRank() - 1}}));
  };
  int64_t n =
      cast<RankedTensorType>(lhs.getType()).getShape().back() / (gates * heads);
  int64_t k = cast<RankedTensorType>(rhs.getType()).getShape().back() / heads;
  Value lhsRows = splitLastDim(b, loc, rowsOf(lhs), {gates, heads, n});
  Value rhsRows = splitLastDim(b, loc, rowsOf(rhs), {heads, k});
  auto outType = RankedTensorType::get({heads, gates, n, k}, element);
  // Dimensions h, g, j, k parallel; r reduced.
  AffineExpr h = getAffineDimExpr(0, context), g = getAffineDimExpr(1, context),
             j = getAffineDimExpr(2, context),
             kk = getAffineDimExpr(3, context),
             r = getAffineDimExpr(4, context);
  return contract(b, loc, lhsRows, rhsRows, outType, Value(), 5, 4,
                  {r, g, h, j}, {r, h, kk}, {h, g, j, kk}, kHeadwiseOuterSum,
                  allowTf32);
}

/// R [1, G·N, K] as the dense [G·N, K].
static Value onlyHead(OpBuilder &b, Location loc, Value weight) {
  return tensor::CollapseShapeOp::create(
      b, loc, weight, SmallVector<ReassociationIndices>{{0, 1}, {2}});
}

Value lowerHeadwiseMatmul(OpBuilder &b, HeadwiseMatmulOp op) {
  // One head is a dense product (with the gate-major layout of rnn.matmul's
  // result): one GEMM on both backends, and the forms every pass after
  // this knows (the step loop's GEMM, the persistent kernels).
  if (op.getNumHeads() == 1)
    return buildContraction(
        b, op.getLoc(), op.getLhs(), onlyHead(b, op.getLoc(), op.getRhs()),
        /*acc=*/Value(),
        /*weightInOut=*/op.getTransposed(), op.getAllowTf32(), op.getType());
  return headwiseMatmulAsGeneric(b, op);
}

Value lowerHeadwiseOuterSum(OpBuilder &b, HeadwiseOuterSumOp op) {
  RankedTensorType type = op.getType();
  Value product = buildHeadwiseOuterSum(
      b, op.getLoc(), op.getLhs(), op.getRhs(), type.getDimSize(0),
      op.getGates(), type.getElementType(), op.getAllowTf32());
  return tensor::CollapseShapeOp::create(
      b, op.getLoc(), type, product,
      SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}});
}

} // namespace lowering
} // namespace rnn
