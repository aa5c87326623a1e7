//===- HeadwiseLowering.cpp - Head-wise products to linalg ----------------===//
//
// rnn.headwise_matmul and rnn.headwise_outer_sum become, by default, one
// linalg.generic each, on views that give heads and gates dimensions of
// their own ([..., NH·K] as [..., NH, K], the gate-major [..., G·NH·N] as
// [..., G, NH, N], the weight [NH, G·N, K] as [NH, G, N, K]). That generic is
// not marked as a GEMM: it lowers to loops, and on the GPU, through
// convert-linalg-to-parallel-loops, to a kernel with one thread per result
// element; correct by construction on both, if not fast.
//
// One head is the dense product: one marked contraction (a GEMM), as for
// rnn.matmul.
//
// With `gemms` (the CPU backend), each becomes one marked contraction per
// head and gate instead, on strided slices of the operands (a head's
// columns, a gate's rows of its matrix) written into a slice of the result:
// convert-matmul-to-library-gemm makes each a BLAS call, reading the slices
// through their leading dimensions.
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
/// sizes of `outType` are leading ones, those of `rows`.
static Value contract(OpBuilder &b, Location loc, Value lhs, Value rhs,
                      RankedTensorType outType, Value rows, unsigned numDims,
                      unsigned numParallel, ArrayRef<AffineExpr> lhsExprs,
                      ArrayRef<AffineExpr> rhsExprs,
                      ArrayRef<AffineExpr> outExprs) {
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
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{lhs, rhs},
             ValueRange{filled}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               buildMultiplyAccumulate(nb, l, args, element);
             })
      .getResult(0);
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
               numParallel, lhsExprs, {h, g, j, kk}, outExprs);
  return mergeLastDims(b, loc, product, op.getTransposed() ? 2 : 3, resultType);
}

static Value headwiseOuterSumAsGeneric(OpBuilder &b, HeadwiseOuterSumOp op) {
  Location loc = op.getLoc();
  MLIRContext *context = b.getContext();
  RankedTensorType resultType = op.getType();
  int64_t heads = resultType.getDimSize(0), gates = op.getGates();
  int64_t n = resultType.getDimSize(1) / gates, k = resultType.getDimSize(2);
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
  Value lhs = splitLastDim(b, loc, rowsOf(op.getLhs()), {gates, heads, n});
  Value rhs = splitLastDim(b, loc, rowsOf(op.getRhs()), {heads, k});
  auto outType =
      RankedTensorType::get({heads, gates, n, k}, resultType.getElementType());
  // Dimensions h, g, j, k parallel; r reduced.
  AffineExpr h = getAffineDimExpr(0, context), g = getAffineDimExpr(1, context),
             j = getAffineDimExpr(2, context),
             kk = getAffineDimExpr(3, context),
             r = getAffineDimExpr(4, context);
  Value product = contract(b, loc, lhs, rhs, outType, Value(), 5, 4,
                           {r, g, h, j}, {r, h, kk}, {h, g, j, kk});
  return tensor::CollapseShapeOp::create(
      b, loc, resultType, product,
      SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}});
}

/// The offsets, sizes and unit strides of columns `offset .. offset + size -
/// 1` of `value` (every leading dimension whole).
static void columnWindow(OpBuilder &b, Location loc, Value value,
                         OpFoldResult offset, int64_t size,
                         SmallVectorImpl<OpFoldResult> &offsets,
                         SmallVectorImpl<OpFoldResult> &sizes,
                         SmallVectorImpl<OpFoldResult> &strides) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  offsets.assign(rank, b.getIndexAttr(0));
  strides.assign(rank, b.getIndexAttr(1));
  sizes.clear();
  for (int64_t d = 0; d + 1 < rank; ++d)
    sizes.push_back(
        type.isDynamicDim(d)
            ? OpFoldResult(tensor::DimOp::create(b, loc, value, d).getResult())
            : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  sizes.push_back(b.getIndexAttr(size));
  offsets.back() = offset;
}

/// `value`'s columns `offset .. offset + size - 1`, leading dimensions whole
/// (kept dynamic where `value`'s are).
static Value sliceColumns(OpBuilder &b, Location loc, Value value,
                          OpFoldResult offset, int64_t size) {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  columnWindow(b, loc, value, offset, size, offsets, sizes, strides);
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = size;
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), value,
      offsets, sizes, strides);
}

static Value insertColumns(OpBuilder &b, Location loc, Value piece, Value dest,
                           OpFoldResult offset) {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  columnWindow(b, loc, dest, offset,
               cast<RankedTensorType>(piece.getType()).getShape().back(),
               offsets, sizes, strides);
  return tensor::InsertSliceOp::create(b, loc, piece, dest, offsets, sizes,
                                       strides);
}

/// Zeros in place of `slice`: the product written into a slice of the result
/// starts from them, which convert-matmul-to-library-gemm turns into a GEMM
/// that overwrites (and bufferization into a GEMM that writes the result's
/// columns directly, with no copy).
static Value zeroed(OpBuilder &b, Location loc, Value slice) {
  Type element = cast<RankedTensorType>(slice.getType()).getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  return linalg::FillOp::create(b, loc, zero, slice).getResult(0);
}

/// The [N, K] window of head `head`, gate `gate` in a [NH, G·N, K] tensor.
static void gateWindow(OpBuilder &b, Location loc, Value head, Value gate,
                       int64_t n, int64_t k,
                       SmallVectorImpl<OpFoldResult> &offsets,
                       SmallVectorImpl<OpFoldResult> &sizes,
                       SmallVectorImpl<OpFoldResult> &strides) {
  Value row = arith::MulIOp::create(b, loc, gate,
                                    arith::ConstantIndexOp::create(b, loc, n));
  offsets.assign({head, row, b.getIndexAttr(0)});
  sizes.assign({b.getIndexAttr(1), b.getIndexAttr(n), b.getIndexAttr(k)});
  strides.assign(3, b.getIndexAttr(1));
}

/// Rows `gate·N .. gate·N + N - 1` of head `head`'s matrix in `weight`
/// [NH, G·N, K]: an [N, K] slice.
static Value gateRows(OpBuilder &b, Location loc, Value weight, Value head,
                      Value gate, int64_t n) {
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t k = type.getDimSize(2);
  SmallVector<OpFoldResult> offsets, sizes, strides;
  gateWindow(b, loc, head, gate, n, k, offsets, sizes, strides);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({n, k}, type.getElementType()), weight,
      offsets, sizes, strides);
}

/// `a · x + c` on indices.
static Value affineIndex(OpBuilder &b, Location loc, Value x, int64_t a,
                         Value c = {}) {
  Value v = arith::MulIOp::create(b, loc, x,
                                  arith::ConstantIndexOp::create(b, loc, a));
  return c ? Value(arith::AddIOp::create(b, loc, v, c)) : v;
}

/// A loop `for i in [0, count)` carrying `init`; `body(i, carried)` returns
/// the next value. A loop rather than one copy of the body per head and
/// gate keeps the IR (and bufferization's analysis) the same size at any
/// head count.
static Value loopOver(OpBuilder &b, Location loc, int64_t count, Value init,
                      function_ref<Value(OpBuilder &, Value, Value)> body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value end = arith::ConstantIndexOp::create(b, loc, count);
  auto loop = scf::ForOp::create(
      b, loc, zero, end, one, ValueRange{init},
      [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        scf::YieldOp::create(nb, l, body(nb, i, carried.front()));
      });
  return loop.getResult(0);
}

/// Forward: result gate g, head h = x_h · R[h, g]ᵀ. Transposed: result head
/// h = Σ_g g_{g,h} · R[h, g], accumulated in the GEMMs.
static Value headwiseMatmulAsGemms(OpBuilder &b, HeadwiseMatmulOp op) {
  Location loc = op.getLoc();
  int64_t heads = op.getNumHeads(), gates = op.getGates();
  int64_t n = op.getHeadOutputSize(), k = op.getHeadInputSize();
  Value lhs = op.getLhs(), weight = op.getRhs();
  bool tf32 = op.getAllowTf32();
  auto product = [&](OpBuilder &nb, Value rows, Value rowsOfWeight, Value acc,
                     bool inOut) {
    return buildContraction(nb, loc, rows, rowsOfWeight, acc, inOut, tf32,
                            cast<RankedTensorType>(acc.getType()));
  };
  Value empty = emptyLike(b, loc, op.getType(), lhs);
  if (!op.getTransposed())
    return loopOver(b, loc, heads, empty, [&](OpBuilder &hb, Value h, Value r) {
      Value x = sliceColumns(hb, loc, lhs, affineIndex(hb, loc, h, k), k);
      return loopOver(hb, loc, gates, r, [&](OpBuilder &gb, Value g, Value r2) {
        // Column (g·NH + h)·N of the gate-major result.
        Value column =
            affineIndex(gb, loc, affineIndex(gb, loc, g, heads, h), n);
        Value dest = zeroed(gb, loc, sliceColumns(gb, loc, r2, column, n));
        Value piece = product(gb, x, gateRows(gb, loc, weight, h, g, n), dest,
                              /*inOut=*/false);
        return insertColumns(gb, loc, piece, r2, column);
      });
    });
  return loopOver(b, loc, heads, empty, [&](OpBuilder &hb, Value h, Value r) {
    Value column = affineIndex(hb, loc, h, k);
    Value zeros = zeroed(hb, loc, sliceColumns(hb, loc, r, column, k));
    Value sum =
        loopOver(hb, loc, gates, zeros, [&](OpBuilder &gb, Value g, Value acc) {
          Value from =
              affineIndex(gb, loc, affineIndex(gb, loc, g, heads, h), n);
          return product(gb, sliceColumns(gb, loc, lhs, from, n),
                         gateRows(gb, loc, weight, h, g, n), acc,
                         /*inOut=*/true);
        });
    return insertColumns(hb, loc, sum, r, column);
  });
}

/// dR[h, g] = g_{g,h}ᵀ · x_h over all rows, one outer sum per head and gate.
static Value headwiseOuterSumAsGemms(OpBuilder &b, HeadwiseOuterSumOp op) {
  Location loc = op.getLoc();
  RankedTensorType resultType = op.getType();
  int64_t heads = resultType.getDimSize(0), gates = op.getGates();
  int64_t n = resultType.getDimSize(1) / gates, k = resultType.getDimSize(2);
  auto pieceType = RankedTensorType::get({n, k}, resultType.getElementType());
  Value empty = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                        resultType.getElementType());
  return loopOver(b, loc, heads, empty, [&](OpBuilder &hb, Value h, Value r) {
    Value x = sliceColumns(hb, loc, op.getRhs(), affineIndex(hb, loc, h, k), k);
    return loopOver(hb, loc, gates, r, [&](OpBuilder &gb, Value g, Value r2) {
      SmallVector<OpFoldResult> offsets, sizes, strides;
      gateWindow(gb, loc, h, g, n, k, offsets, sizes, strides);
      Value dest = zeroed(gb, loc,
                          tensor::ExtractSliceOp::create(
                              gb, loc, pieceType, r2, offsets, sizes, strides));
      Value from = affineIndex(gb, loc, affineIndex(gb, loc, g, heads, h), n);
      Value piece =
          buildOuterSum(gb, loc, sliceColumns(gb, loc, op.getLhs(), from, n), x,
                        op.getAllowTf32(), pieceType, dest);
      return Value(tensor::InsertSliceOp::create(gb, loc, piece, r2, offsets,
                                                 sizes, strides));
    });
  });
}

/// R [1, G·N, K] as the dense [G·N, K].
static Value onlyHead(OpBuilder &b, Location loc, Value weight) {
  return tensor::CollapseShapeOp::create(
      b, loc, weight, SmallVector<ReassociationIndices>{{0, 1}, {2}});
}

Value lowerHeadwiseMatmul(OpBuilder &b, HeadwiseMatmulOp op, bool gemms) {
  // One head is a dense product (with the gate-major layout of rnn.matmul's
  // result): one GEMM on both backends, and the forms every pass after
  // this knows (the step loop's GEMM, the persistent kernels).
  if (op.getNumHeads() == 1)
    return buildContraction(
        b, op.getLoc(), op.getLhs(), onlyHead(b, op.getLoc(), op.getRhs()),
        /*acc=*/Value(),
        /*weightInOut=*/op.getTransposed(), op.getAllowTf32(), op.getType());
  return gemms ? headwiseMatmulAsGemms(b, op) : headwiseMatmulAsGeneric(b, op);
}

Value lowerHeadwiseOuterSum(OpBuilder &b, HeadwiseOuterSumOp op, bool gemms) {
  RankedTensorType type = op.getType();
  if (type.getDimSize(0) == 1) {
    Location loc = op.getLoc();
    auto denseType = RankedTensorType::get(type.getShape().drop_front(),
                                           type.getElementType());
    Value dense = buildOuterSum(b, loc, op.getLhs(), op.getRhs(),
                                op.getAllowTf32(), denseType);
    return tensor::ExpandShapeOp::create(
        b, loc, type, dense, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  }
  return gemms ? headwiseOuterSumAsGemms(b, op)
               : headwiseOuterSumAsGeneric(b, op);
}

} // namespace lowering
} // namespace rnn
