//===- OpLowering.cpp - rnn ops to tensor-level code ----------------------===//

#include "Lowering.h"

#include "rnn/Dialect/RNN/IR/ScalarSemantics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace rnn {
namespace lowering {

void buildMultiplyAccumulate(OpBuilder &b, Location loc, ValueRange args,
                             Type element) {
  Value x = args[0], w = args[1];
  if (x.getType() != element) {
    x = arith::ExtFOp::create(b, loc, element, x);
    w = arith::ExtFOp::create(b, loc, element, w);
  }
  Value product = arith::MulFOp::create(b, loc, x, w);
  linalg::YieldOp::create(
      b, loc, Value(arith::AddFOp::create(b, loc, args[2], product)));
}

/// A matmul becomes a contraction over the rows: a linalg.generic with the
/// leading dimensions and N parallel and K reduced, marked with the weight
/// layout so that the library-GEMM lowering can turn it into one GEMM call
/// (all T·B rows of a hoisted projection at once). Unconverted, it lowers to
/// correct loops.
Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value acc, bool weightInOut, bool allowTf32,
                       RankedTensorType resultType) {
  MLIRContext *context = b.getContext();
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
  AffineMap weightMap = weightInOut
                            ? AffineMap::get(rank + 1, 0, {k, n}, context)
                            : AffineMap::get(rank + 1, 0, {n, k}, context);
  SmallVector<AffineMap> maps{AffineMap::get(rank + 1, 0, lhsExprs, context),
                              weightMap,
                              AffineMap::get(rank + 1, 0, outExprs, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);

  // The contraction accumulates onto its init: `acc`, or zeros.
  Value filled = acc;
  if (!filled) {
    Value init = emptyLike(b, loc, resultType, lhs);
    Value zero =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
    filled = linalg::FillOp::create(b, loc, zero, init).getResult(0);
  }
  auto contraction = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{lhs, rhs}, ValueRange{filled},
      maps, iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        buildMultiplyAccumulate(nb, l, args, element);
      });
  contraction->setAttr(kGemmWeightLayoutAttr,
                       b.getI32IntegerAttr(weightInOut ? 1 : 0));
  if (allowTf32)
    contraction->setAttr(kGemmAllowTf32Attr, b.getUnitAttr());
  return contraction.getResult(0);
}

static Value lowerMatmul(OpBuilder &b, MatmulOp matmul) {
  return buildContraction(b, matmul.getLoc(), matmul.getLhs(), matmul.getRhs(),
                          matmul.getAcc(), matmul.getWeightInOut(),
                          matmul.getAllowTf32(), matmul.getType());
}

/// `lhsᵀ · rhs` over all rows: the one-head, one-gate case of the head-wise
/// outer sum, whose generic the library-GEMM lowering makes one GEMM that
/// reads lhs [R, N] transposed where it lies (a copy into [N, R] first was
/// an uncoalesced pass over the sequence's gate gradients: 375 us of a
/// 3.3 ms training step at FlashRNN's grid on the H100).
Value buildOuterSum(OpBuilder &b, Location loc, Value lhsRows, Value rhsRows,
                    bool allowTf32, RankedTensorType resultType) {
  Value product = buildHeadwiseOuterSum(b, loc, lhsRows, rhsRows, /*heads=*/1,
                                        /*gates=*/1,
                                        resultType.getElementType(), allowTf32);
  return tensor::CollapseShapeOp::create(
      b, loc, resultType, product,
      SmallVector<ReassociationIndices>{{0, 1, 2}, {3}});
}

static Value lowerOuterSum(OpBuilder &b, OuterSumOp outer) {
  return buildOuterSum(b, outer.getLoc(), outer.getLhs(), outer.getRhs(),
                       outer.getAllowTf32(), outer.getType());
}

/// Sums the input over the dimensions that the result broadcasts along: a
/// reducing linalg.generic into a zero-filled result.
/// Whether `sum` adds up all rows: every leading dimension of the input is
/// reduced (missing or 1 in the result) and the last one kept whole or
/// reduced too (a bias `[..., N] -> [N]`, a scalar parameter `-> []`).
static bool sumsAllRows(SumToOp sum) {
  auto inputType = cast<RankedTensorType>(sum.getInput().getType());
  RankedTensorType resultType = sum.getType();
  int64_t inRank = inputType.getRank(), outRank = resultType.getRank();
  int64_t width = inputType.getShape().back();
  if (inRank < 2 || ShapedType::isDynamic(width))
    return false;
  for (int64_t j = 0; j + 1 < outRank; ++j)
    if (resultType.getDimSize(j) != 1)
      return false;
  int64_t last = outRank ? resultType.getShape().back() : 1;
  return last == width || last == 1;
}

/// The sum of all rows as the product of a row of ones with them,
/// `[1, R] x [R, N]` (one library GEMM), then a row sum where the result
/// reduces N too. As a reducing generic, the GPU backend would run the
/// reduced rows as a host loop of kernels (6,400 launches for a bias
/// gradient at T = 100, B = 64).
static Value sumRowsAsProduct(OpBuilder &b, SumToOp sum) {
  Location loc = sum.getLoc();
  Value input = sum.getInput();
  auto inputType = cast<RankedTensorType>(input.getType());
  RankedTensorType resultType = sum.getType();
  // The ones are of the input's type (exact in every float type); the
  // product accumulates in the result's.
  Type element = inputType.getElementType();
  int64_t width = inputType.getShape().back();
  Value rows = input;
  if (inputType.getRank() > 2) {
    ReassociationIndices leading;
    for (int64_t d = 0; d + 1 < inputType.getRank(); ++d)
      leading.push_back(d);
    rows = tensor::CollapseShapeOp::create(
        b, loc, input,
        SmallVector<ReassociationIndices>{leading, {inputType.getRank() - 1}});
  }
  auto rowsType = cast<RankedTensorType>(rows.getType());
  auto onesType = RankedTensorType::get({1, rowsType.getDimSize(0)}, element);
  SmallVector<Value> dynamic;
  if (rowsType.isDynamicDim(0))
    dynamic.push_back(tensor::DimOp::create(b, loc, rows, 0));
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 1.0));
  Value empty = tensor::EmptyOp::create(b, loc, onesType, dynamic);
  Value ones = linalg::FillOp::create(b, loc, one, empty).getResult(0);
  Value total = buildContraction(
      b, loc, ones, rows, /*acc=*/Value(), /*weightInOut=*/true,
      /*allowTf32=*/false,
      RankedTensorType::get({1, width}, resultType.getElementType()));
  int64_t outRank = resultType.getRank();
  if ((outRank ? resultType.getShape().back() : 1) != width)
    total = reduceRows(b, loc, total, /*isMax=*/false); // [1, 1]
  // [1, n] to the result's shape: [n], [], [1, n] or [1, ..., 1, n].
  if (outRank == 2)
    return total;
  if (outRank < 2) {
    SmallVector<ReassociationIndices> all;
    if (outRank == 1)
      all.push_back({0, 1});
    return tensor::CollapseShapeOp::create(b, loc, resultType, total, all);
  }
  ReassociationIndices leading;
  for (int64_t d = 0; d + 1 < outRank; ++d)
    leading.push_back(d);
  return tensor::ExpandShapeOp::create(
      b, loc, resultType, total,
      SmallVector<ReassociationIndices>{leading, {outRank - 1}});
}

static Value lowerSumTo(OpBuilder &b, SumToOp sum) {
  Location loc = sum.getLoc();
  MLIRContext *context = b.getContext();
  Value input = sum.getInput();
  auto inputType = cast<RankedTensorType>(input.getType());
  RankedTensorType resultType = sum.getType();
  int64_t inRank = inputType.getRank(), outRank = resultType.getRank();
  if (sumsAllRows(sum))
    return sumRowsAsProduct(b, sum);
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators(inRank,
                                             utils::IteratorType::reduction);
  for (int64_t j = 0; j < outRank; ++j) {
    int64_t i = j + inRank - outRank;
    if (resultType.getDimSize(j) == 1 && inputType.getDimSize(i) != 1) {
      outExprs.push_back(getAffineConstantExpr(0, context));
      continue;
    }
    outExprs.push_back(getAffineDimExpr(i, context));
    iterators[i] = utils::IteratorType::parallel;
  }
  SmallVector<AffineMap> maps{
      AffineMap::getMultiDimIdentityMap(inRank, context),
      AffineMap::get(inRank, 0, outExprs, context)};
  Value init = emptyLike(b, loc, resultType, input);
  Value zero = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(resultType.getElementType(), 0.0));
  Value filled = linalg::FillOp::create(b, loc, zero, init).getResult(0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{input},
             ValueRange{filled}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               // A 16-bit input sums in the result's f32.
               Value element = args[0];
               if (element.getType() != args[1].getType())
                 element =
                     arith::ExtFOp::create(nb, l, args[1].getType(), element);
               linalg::YieldOp::create(
                   nb, l,
                   Value(arith::AddFOp::create(nb, l, args[1], element)));
             })
      .getResult(0);
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

/// One tensor.concat, which bufferizes in one step: a buffer and a copy of
/// each piece into its subview. As a chain of n tensor.insert_slice into a
/// tensor.empty, every link aliases the whole chain, and empty-tensor
/// elimination and one-shot bufferization took time growing as n^3.7 (18 of
/// the 19.8 s a cell of 128 gates took to compile; docs/performance-notes.md).
/// The code is the same: pieces that are arguments (packed weights) or whole
/// sequences are copied, as the chain copied them, and a piece computed into
/// a fresh buffer is computed in its place by elide-buffer-copies.
static Value lowerConcat(OpBuilder &b, ConcatOp concat) {
  return tensor::ConcatOp::create(b, concat.getLoc(), concat.getType(),
                                  concat.getConcatAxis(), concat.getInputs());
}

/// A copy with permuted dimensions: a parallel generic that reads the input
/// through the permutation.
static Value lowerTranspose(OpBuilder &b, TransposeOp transpose) {
  Location loc = transpose.getLoc();
  MLIRContext *context = b.getContext();
  Value input = transpose.getInput();
  RankedTensorType type = transpose.getType();
  ArrayRef<int64_t> permutation = transpose.getPermutation();
  int64_t rank = type.getRank();
  SmallVector<Value> dynamic;
  for (int64_t i = 0; i < rank; ++i)
    if (type.isDynamicDim(i))
      dynamic.push_back(tensor::DimOp::create(b, loc, input, permutation[i]));
  Value init = tensor::EmptyOp::create(b, loc, type, dynamic);
  // Input dimension permutation[i] is iterated by result dimension i.
  SmallVector<AffineExpr> inputExprs(rank);
  for (int64_t i = 0; i < rank; ++i)
    inputExprs[permutation[i]] = getAffineDimExpr(i, context);
  SmallVector<AffineMap> maps{AffineMap::get(rank, 0, inputExprs, context),
                              AffineMap::getMultiDimIdentityMap(rank, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{input}, ValueRange{init}, maps,
             iterators,
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, args[0]);
             })
      .getResult(0);
}

/// The reassociation that collapses `shape` onto its dimensions other than
/// static 1s: each such dimension with the unit dimensions after it (the
/// leading unit dimensions join the first). Empty when every dimension is a
/// unit one (the collapse is to rank 0).
static SmallVector<ReassociationIndices>
unitDimReassociation(ArrayRef<int64_t> shape) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices leading;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (size != 1) {
      groups.emplace_back(leading);
      leading.clear();
      groups.back().push_back(d);
    } else if (groups.empty()) {
      leading.push_back(d);
    } else {
      groups.back().push_back(d);
    }
  }
  return groups;
}

/// Unit dimensions dropped (tensor.collapse_shape onto the other
/// dimensions), then inserted (tensor.expand_shape): views, no copy.
static Value lowerReshape(OpBuilder &b, ReshapeOp reshape) {
  Location loc = reshape.getLoc();
  Value value = reshape.getInput();
  auto inputType = cast<RankedTensorType>(value.getType());
  RankedTensorType type = reshape.getType();
  SmallVector<int64_t> core;
  for (int64_t d : inputType.getShape())
    if (d != 1)
      core.push_back(d);
  auto coreType = RankedTensorType::get(core, type.getElementType());
  if (inputType != coreType)
    value = tensor::CollapseShapeOp::create(
        b, loc, coreType, value, unitDimReassociation(inputType.getShape()));
  if (type != coreType)
    value = tensor::ExpandShapeOp::create(
        b, loc, type, value, unitDimReassociation(type.getShape()));
  return value;
}

/// One parallel generic over [T, B, N]: each element reads the initial
/// state at its row's first step and otherwise the sequence one step back
/// (in the scan's order), through a tensor.extract at a computed index.
static Value lowerPreviousStates(OpBuilder &b, PreviousStatesOp op) {
  Location loc = op.getLoc();
  MLIRContext *context = b.getContext();
  Value sequence = op.getSequence(), init = op.getInit(),
        lengths = op.getLengths();
  auto type = cast<RankedTensorType>(op.getType());
  Value out = emptyLike(b, loc, type, sequence);
  Value steps = tensor::DimOp::create(b, loc, sequence, 0);
  AffineExpr row = getAffineDimExpr(1, context),
             n = getAffineDimExpr(2, context);
  SmallVector<Value> inputs{init};
  SmallVector<AffineMap> maps{AffineMap::get(3, 0, {row, n}, context)};
  if (lengths) {
    inputs.push_back(lengths);
    maps.push_back(AffineMap::get(3, 0, {row}, context));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(3, context));
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  bool reverse = op.getReverse();
  Type element = type.getElementType();
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs, ValueRange{out}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value ti = linalg::IndexOp::create(nb, l, 0);
               Value bi = linalg::IndexOp::create(nb, l, 1);
               Value ni = linalg::IndexOp::create(nb, l, 2);
               Value length = steps;
               if (lengths)
                 length = arith::IndexCastOp::create(nb, l, nb.getIndexType(),
                                                     args[1]);
               Value zero = arith::ConstantIndexOp::create(nb, l, 0);
               Value one = arith::ConstantIndexOp::create(nb, l, 1);
               Value first, source;
               if (!reverse) {
                 first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                               ti, zero);
                 source = arith::MaxSIOp::create(
                     nb, l, arith::SubIOp::create(nb, l, ti, one), zero);
               } else {
                 Value last = arith::SubIOp::create(nb, l, length, one);
                 first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                               ti, last);
                 source = arith::MinSIOp::create(
                     nb, l, arith::AddIOp::create(nb, l, ti, one),
                     arith::SubIOp::create(nb, l, steps, one));
               }
               Value before = tensor::ExtractOp::create(
                   nb, l, sequence, ValueRange{source, bi, ni});
               Value value =
                   arith::SelectOp::create(nb, l, first, args[0], before);
               Value valid = arith::CmpIOp::create(
                   nb, l, arith::CmpIPredicate::slt, ti, length);
               Value zeroValue = arith::ConstantOp::create(
                   nb, l, nb.getFloatAttr(element, 0.0));
               linalg::YieldOp::create(nb, l,
                                       Value(arith::SelectOp::create(
                                           nb, l, valid, value, zeroValue)));
             })
      .getResult(0);
}

/// A cast of the result of an elementwise generic that nothing else reads
/// (a backward's previous states, rounded for a bf16 weight gradient): the
/// producer again, casting what it yields, so that one kernel writes the
/// cast type instead of one writing f32 and another reading it back. Null
/// where the producer does not qualify (a reduction, an init it reads,
/// other readers).
static Value castInProducer(OpBuilder &b, CastOp castOp) {
  auto producer = castOp.getInput().getDefiningOp<linalg::GenericOp>();
  if (!producer || !producer->hasOneUse() || producer->getNumResults() != 1 ||
      producer.getNumReductionLoops() != 0 ||
      !producer.hasPureTensorSemantics())
    return {};
  OpOperand *init = producer.getDpsInitOperand(0);
  auto empty = init->get().getDefiningOp<tensor::EmptyOp>();
  if (!empty || producer.payloadUsesValueFromOperand(init))
    return {};
  Location loc = castOp.getLoc();
  RankedTensorType type = castOp.getType();
  Type element = type.getElementType();
  Value out = tensor::EmptyOp::create(b, loc, type, empty.getDynamicSizes());
  auto fused = linalg::GenericOp::create(
      b, loc, TypeRange{type}, producer.getDpsInputs(), ValueRange{out},
      producer.getIndexingMapsArray(), producer.getIteratorTypesArray());
  fused->setDiscardableAttrs(producer->getDiscardableAttrDictionary());
  IRMapping mapping;
  producer.getRegion().cloneInto(&fused.getRegion(), mapping);
  Block &body = fused.getRegion().front();
  body.getArgument(body.getNumArguments() - 1).setType(element);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  OpBuilder nb(yield);
  Value rounded = buildScalarElementwise(
      nb, loc, castOp, ValueRange{yield.getOperand(0)}, element);
  yield->setOperand(0, rounded);
  return fused.getResult(0);
}

FailureOr<SmallVector<Value>> lowerOp(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  if (auto castOp = dyn_cast<CastOp>(op))
    if (Value fused = castInProducer(b, castOp))
      return SmallVector<Value>{fused};
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
  if (auto outer = dyn_cast<OuterSumOp>(op))
    return SmallVector<Value>{lowerOuterSum(b, outer)};
  if (auto headwise = dyn_cast<HeadwiseMatmulOp>(op))
    return SmallVector<Value>{lowerHeadwiseMatmul(b, headwise)};
  if (auto headwise = dyn_cast<HeadwiseOuterSumOp>(op))
    return SmallVector<Value>{lowerHeadwiseOuterSum(b, headwise)};
  if (auto sum = dyn_cast<SumToOp>(op))
    return SmallVector<Value>{lowerSumTo(b, sum)};
  if (auto previous = dyn_cast<PreviousStatesOp>(op))
    return SmallVector<Value>{lowerPreviousStates(b, previous)};
  if (auto split = dyn_cast<SplitOp>(op))
    return lowerSplit(b, split);
  if (auto concat = dyn_cast<ConcatOp>(op))
    return SmallVector<Value>{lowerConcat(b, concat)};
  if (auto transpose = dyn_cast<TransposeOp>(op))
    return SmallVector<Value>{lowerTranspose(b, transpose)};
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return SmallVector<Value>{lowerReshape(b, reshape)};
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
